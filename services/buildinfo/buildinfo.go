// Package buildinfo holds the version every binary and micro service reports.
package buildinfo

// Version is the SemVer version of this build; release builds set it with
// -ldflags "-X github.com/mirobody/mirobody-go/services/buildinfo.Version=…".
var Version = "0.1.0"
