package factom

import (
	"context"
	"fmt"
	"strings"
)

// Recount re-counts one evidence line of a Factom run, apart from the
// run's confirmer (tpslab verify): directory block height on the node at
// url must have the key Merkle root the run recorded, and each id must be
// an entry of its entry blocks or a transaction of its factoid block.
func Recount(ctx context.Context, url string, height int64, keymr string, ids []string) (found int64, diffs []string, err error) {
	cl := NewClient(strings.TrimSuffix(url, "/"))
	b, err := ReadBlock(ctx, cl, height)
	if err != nil {
		return 0, nil, fmt.Errorf("directory block %d is not on %s: %v", height, url, err)
	}
	if keymr != "" && !strings.EqualFold(b.Hash, keymr) {
		return 0, nil, fmt.Errorf("directory block %d on %s is another block (key Merkle root %s, the run counted %s): another network", height, url, b.Hash, keymr)
	}
	in := make(map[string]bool, len(b.Txs))
	for _, t := range b.Txs {
		in[t.ID.String()] = true
	}
	for _, id := range ids {
		if in[strings.ToLower(id)] {
			found++
		} else {
			diffs = append(diffs, fmt.Sprintf("%s not in directory block %d", id, height))
		}
	}
	return found, diffs, nil
}
