package cli_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/tpslab/tpslab/internal/cli"
)

// find-max --why explains the step that missed at the bracket's top, the
// last of them when the confirmation missed there too; a search that never
// missed has nothing to explain.
func TestFindMaxWhyTakesTheStepThatMissed(t *testing.T) {
	dir := t.TempDir()
	write := func(doc string) {
		if err := os.WriteFile(filepath.Join(dir, "find-max.json"), []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(`{"outcome":{"bracket":[400,800],"steps":[
		{"rate":200,"dir":"s1","ok":true},{"rate":400,"dir":"s2","ok":true},{"rate":800,"dir":"s3","ok":false},
		{"rate":1600,"dir":"s4","ok":false},{"rate":800,"dir":"s5","ok":false,"confirm":true}]}}`)
	if st, ok := cli.MissedStep(dir); !ok || st.Dir != "s5" || st.Rate != 800 {
		t.Errorf("missed step %+v, %v; want s5 at 800 (the bracket's top, the last to miss there)", st, ok)
	}
	write(`{"outcome":{"bracket":[1600,0],"steps":[{"rate":1600,"dir":"s1","ok":true}]}}`)
	if st, ok := cli.MissedStep(dir); ok {
		t.Errorf("a search that never missed: %+v", st)
	}
}
