package wire

import (
	"sync"
	"testing"
	"time"
)

// TestWorkers: a worker that finished a job takes the next one instead of
// exiting, and jobs that run at the same time each get a goroutine.
func TestWorkers(t *testing.T) {
	tests := []struct {
		name    string
		jobs    int
		overlap bool // every job waits until all have started
		started int64
	}{
		{name: "a finished worker takes the next job", jobs: 5, started: 1},
		{name: "jobs at the same time get their own", jobs: 8, overlap: true, started: 8},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := &workers{idle: make(chan func()), linger: time.Minute}
			var all sync.WaitGroup
			all.Add(tt.jobs)
			job := func(done chan struct{}) func() {
				return func() {
					all.Done()
					if tt.overlap {
						all.Wait()
					}
					close(done)
				}
			}
			for i := range tt.jobs {
				done := make(chan struct{})
				switch {
				case tt.overlap || i == 0:
					w.run(job(done))
				default:
					// Blocks until the worker waits for a job again.
					select {
					case w.idle <- job(done):
					case <-time.After(10 * time.Second):
						t.Fatal("the worker did not wait for another job")
					}
				}
				if !tt.overlap {
					<-done
				}
			}
			all.Wait()
			if got := w.started.Load(); got != tt.started {
				t.Fatalf("%d goroutines started, want %d", got, tt.started)
			}
		})
	}
}
