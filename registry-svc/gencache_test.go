package registrysvc

import "testing"

// TestGenCache: a load stores its value only if the account was not
// invalidated since the load read its generation; other accounts are
// untouched by an invalidation.
func TestGenCache(t *testing.T) {
	tests := []struct {
		name string
		// between runs after the load read its generation, before it stores.
		between func(c *genCache[string])
		stored  bool
		want    string // the cached value after the load, "" for none
		otherB  bool   // account b's value is still cached
	}{
		{"nothing happened", func(*genCache[string]) {}, true, "loaded", true},
		{"the account changed", func(c *genCache[string]) { c.invalidate("a") }, false, "", true},
		{"it changed twice", func(c *genCache[string]) { c.invalidate("a"); c.invalidate("a") }, false, "", true},
		{"another account changed", func(c *genCache[string]) { c.invalidate("b") }, true, "loaded", false},
		{"a newer load stored first", func(c *genCache[string]) {
			c.invalidate("a")
			_, gen, _ := c.get("a")
			c.put("a", gen, "newer")
		}, false, "newer", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newGenCache[string]()
			c.put("b", 0, "b's")
			if _, _, ok := c.get("a"); ok {
				t.Fatal("an empty cache has a value")
			}
			_, gen, _ := c.get("a")
			tt.between(c)
			if got := c.put("a", gen, "loaded"); got != tt.stored {
				t.Errorf("put stored %v, want %v", got, tt.stored)
			}
			if got, _, ok := c.get("a"); got != tt.want || ok != (tt.want != "") {
				t.Errorf("cached %q (%v), want %q", got, ok, tt.want)
			}
			if b, _, ok := c.get("b"); ok != tt.otherB || ok && b != "b's" {
				t.Errorf("the other account's value: %q (%v)", b, ok)
			}
		})
	}
}
