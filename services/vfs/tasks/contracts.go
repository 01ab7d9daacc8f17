package tasks

import "github.com/mirobody/mirobody-go/services/wire"

// Contracts lists every endpoint of the package, for the golden tests and
// for the server's check that it serves them all.
func Contracts() []wire.Contract {
	return []wire.Contract{Create, Get, Finish, Cancel, Update}
}
