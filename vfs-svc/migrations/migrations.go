// Package migrations embeds vfs-svc's SQL migrations (goose format).
package migrations

import "embed"

// FS holds the migration files, applied in version order.
//
//go:embed *.sql
var FS embed.FS
