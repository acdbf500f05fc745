//go:build !slowverify

package chain

// extraVerifies is 0 in every normal build (see slowverify.go).
const extraVerifies = 0
