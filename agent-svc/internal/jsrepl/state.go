package jsrepl

import (
	"cmp"
	"slices"
)

// evict drops the state of the least recently used sessions while the
// state all sessions keep exceeds MaxStateBytes; current, the session
// whose eval just ended, goes last. Sessions with an eval in progress are
// skipped: their memory is their eval's budget until it ends. It reports
// whether it dropped any; the next eval of a dropped session says so.
func (s *Store) evict(current string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	var total int64
	keys := make([]string, 0, len(s.sessions))
	for k, ss := range s.sessions {
		total += ss.retained.Load()
		keys = append(keys, k)
	}
	if total <= s.opts.MaxStateBytes {
		return false
	}
	slices.SortFunc(keys, func(a, b string) int {
		if a == current || b == current {
			return cmp.Compare(boolInt(a == current), boolInt(b == current))
		}
		return s.sessions[a].used.Compare(s.sessions[b].used)
	})
	dropped := 0
	now := s.now()
	for _, k := range keys {
		if total <= s.opts.MaxStateBytes {
			break
		}
		ss := s.sessions[k]
		if !ss.mu.TryLock() {
			continue
		}
		total -= ss.retained.Load()
		ss.gone, ss.rt = true, nil
		ss.mu.Unlock()
		delete(s.sessions, k)
		s.resets[k] = reset{at: now, evicted: true}
		dropped++
	}
	if dropped > 0 {
		s.opts.Log.Info("dropped the REPL state of the least recently used sessions to stay within JS_MAX_STATE_BYTES",
			"sessions", dropped, "kept_bytes", total, "limit_bytes", s.opts.MaxStateBytes)
	}
	return dropped > 0
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
