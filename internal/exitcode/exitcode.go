// Package exitcode holds tpslab's process exit codes and the error type that
// carries one from a command to main.
package exitcode

import (
	"errors"
	"fmt"
)

const (
	OK               = 0
	ThresholdsFailed = 1 // the run completed but a threshold did not hold
	BadInput         = 2 // a flag, file or value was wrong; nothing ran
	TargetFailed     = 3 // the system under test or the run itself failed
)

// Error is an error with the exit code it should produce.
type Error struct {
	Code int
	Err  error
}

func (e *Error) Error() string { return e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// BadInputf makes an exit-2 error.
func BadInputf(format string, a ...any) error {
	return &Error{Code: BadInput, Err: fmt.Errorf(format, a...)}
}

// Wrap attaches a code to err (nil stays nil); an error that already carries
// a code keeps it.
func Wrap(code int, err error) error {
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) {
		return err
	}
	return &Error{Code: code, Err: err}
}

// Of returns the exit code err asks for; unknown errors are target failures.
func Of(err error) int {
	if err == nil {
		return OK
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return TargetFailed
}
