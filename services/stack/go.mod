module github.com/mirobody/mirobody-go/services/stack

go 1.26.0

require (
	github.com/mirobody/mirobody-go/services v0.0.0
	github.com/mirobody/mirobody-go/gateway v0.0.0
	github.com/mirobody/mirobody-go/registry-svc v0.0.0
	github.com/mirobody/mirobody-go/agent-svc v0.0.0
	github.com/mirobody/mirobody-go/vfs-svc v0.0.0
)

replace (
	github.com/mirobody/mirobody-go/services => ../
	github.com/mirobody/mirobody-go/gateway => ../../gateway
	github.com/mirobody/mirobody-go/registry-svc => ../../registry-svc
	github.com/mirobody/mirobody-go/agent-svc => ../../agent-svc
	github.com/mirobody/mirobody-go/vfs-svc => ../../vfs-svc
)
