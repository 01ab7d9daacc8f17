package registrysvc

import (
	"sync"
	"time"
)

// listChangedWindow is the shortest time between two announcements of one
// account's tool change: short enough that a client sees a change at once
// or within half a second, long enough that a flood of list_changed from a
// server costs two events a second.
const listChangedWindow = 500 * time.Millisecond

// coalescer runs fn for a key at most once per window. The first add runs
// it at once and opens a window; adds during the window run it once more
// when the window ends (which opens another), so the last change is always
// announced, at most one window late.
type coalescer struct {
	window time.Duration
	fn     func(key string)

	mu     sync.Mutex
	open   map[string]*window
	closed bool
}

// window is an open window of one key.
type window struct {
	timer *time.Timer
	again bool // an add came during the window
}

func newCoalescer(d time.Duration, fn func(key string)) *coalescer {
	return &coalescer{window: d, fn: fn, open: map[string]*window{}}
}

// add asks for fn(key).
func (c *coalescer) add(key string) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	if w := c.open[key]; w != nil {
		w.again = true
		c.mu.Unlock()
		return
	}
	c.open[key] = c.start(key)
	c.mu.Unlock()
	c.fn(key)
}

// start opens a window for key. Called with mu held.
func (c *coalescer) start(key string) *window {
	w := &window{}
	w.timer = time.AfterFunc(c.window, func() { c.end(key, w) })
	return w
}

// end closes w, running fn once more if adds came during it.
func (c *coalescer) end(key string, w *window) {
	c.mu.Lock()
	if c.closed || c.open[key] != w {
		c.mu.Unlock()
		return
	}
	if !w.again {
		delete(c.open, key)
		c.mu.Unlock()
		return
	}
	c.open[key] = c.start(key)
	c.mu.Unlock()
	c.fn(key)
}

// close stops the windows; pending runs are dropped.
func (c *coalescer) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	for _, w := range c.open {
		w.timer.Stop()
	}
	c.open = nil
}
