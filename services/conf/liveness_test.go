package conf

import (
	"testing"
	"time"
)

func TestLiveness(t *testing.T) {
	for _, tc := range []struct {
		ms   int
		want time.Duration
	}{
		{2000, 2 * time.Second},
		{300, 300 * time.Millisecond},
		{0, -1},
	} {
		if got := (&Config{LivenessMS: tc.ms}).Liveness(); got != tc.want {
			t.Errorf("LIVENESS_MS %d: Liveness() = %v, want %v", tc.ms, got, tc.want)
		}
	}
}
