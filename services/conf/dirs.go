package conf

import (
	"fmt"
	"os"
)

// MissingDirs returns one error for each of dirs that is not a folder, for
// a start-up warning. It is no reason to stop: a deployment that forgot a
// volume still serves everything else, and says what is missing.
func MissingDirs(dirs []string) []error {
	var out []error
	for _, d := range dirs {
		st, err := os.Stat(d)
		switch {
		case err != nil:
			out = append(out, err)
		case !st.IsDir():
			out = append(out, fmt.Errorf("%s is not a folder", d))
		}
	}
	return out
}
