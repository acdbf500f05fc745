package all

import (
	"reflect"
	"strings"
	"testing"

	"github.com/tpslab/tpslab/internal/kinds"
)

// A result's scenario is JSON and reads back through the YAML names
// (tpslab reproduce): every setting of a kind's section must have one name
// in both (issue 57: factom's block_time was block_time_s in result.json).
func TestKindSettingsReadBack(t *testing.T) {
	for _, k := range Registry().All() {
		c, ok := k.(kinds.Configured)
		if !ok {
			continue
		}
		section, defaults := c.Settings()
		ty := reflect.TypeOf(defaults).Elem()
		for i := 0; i < ty.NumField(); i++ {
			f := ty.Field(i)
			y, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
			j, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if y != j {
				t.Errorf("%s.%s: yaml %q, json %q: a result's scenario would not read back", section, f.Name, y, j)
			}
		}
	}
}
