package conf

import "time"

// Liveness is the liveness window every service's wire client uses
// (LIVENESS_MS), in wire.ClientOptions.Liveness's terms: LIVENESS_MS 0,
// which turns liveness off, is a negative duration there, since zero means
// wire's default.
func (c *Config) Liveness() time.Duration {
	if c.LivenessMS == 0 {
		return -1
	}
	return time.Duration(c.LivenessMS) * time.Millisecond
}
