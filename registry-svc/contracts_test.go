package registrysvc

import (
	"testing"

	"github.com/mirobody/mirobody-go/services/registry"
	"github.com/mirobody/mirobody-go/services/wire/wiretest"
)

// TestServesItsContract: registry-svc answers every endpoint of its
// contract, and nothing else.
func TestServesItsContract(t *testing.T) {
	e := start(t, map[string]string{})
	wiretest.Served(t, e.wire, Name, registry.Contracts())
}
