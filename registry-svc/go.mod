module github.com/mirobody/mirobody-go/registry-svc

go 1.26.0

require github.com/mirobody/mirobody-go/services v0.0.0

replace github.com/mirobody/mirobody-go/services => ../services
