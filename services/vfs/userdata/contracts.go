package userdata

import "github.com/mirobody/mirobody-go/services/wire"

// Contracts lists every endpoint and event of the package, for the golden
// tests and for the server's check that it serves them all.
func Contracts() []wire.Contract {
	return []wire.Contract{
		Kinds, DataChanged,
		ImportBegin, ImportChunk, ImportCommit, ImportAbort,
		HealthQuery, HealthDelete, GeneticQuery, GeneticDelete,
		Summary, ImportDelete,
	}
}
