//go:build slowverify

package chain

// extraVerifies makes a deliberately slower node: every signature is
// checked this many times more. Only `go build -tags slowverify` has it;
// the ab test compares such a build with a normal one.
const extraVerifies = 100
