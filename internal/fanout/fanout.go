// Package fanout spreads independent work over every core: key derivation,
// presigning, signature checks.
package fanout

import (
	"runtime"
	"sync"
)

// Each calls f(w, i) for i in [0, n) on GOMAXPROCS goroutines, worker w
// taking i = w, w+workers, ... (strided, so neighbouring items, which cost
// alike, land on different cores); it returns when all are done.
func Each(n int, f func(w, i int)) {
	Workers(n, func(w int) func(i int) { return func(i int) { f(w, i) } })
}

// Workers is Each for work that needs state of its own per worker (a
// random source, a scratch buffer): each worker w calls start(w) once and
// the function it returns for each of its items.
func Workers(n int, start func(w int) func(i int)) {
	workers := min(runtime.GOMAXPROCS(0), n)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			item := start(w)
			for i := w; i < n; i += workers {
				item(i)
			}
		}(w)
	}
	wg.Wait()
}

// Map is f(0), ..., f(n-1), computed on every core.
func Map[T any](n int, f func(i int) T) []T {
	out := make([]T, n)
	Each(n, func(_, i int) { out[i] = f(i) })
	return out
}
