// Package refusal is the error of a desired state that only the user, or a cluster
// admin, can fix: a spec, configuration, Secret or name the operator cannot use as it
// is. It travels through the ordinary error return of every stage, beside transient
// errors; the reconciler tells them apart with As. A refusal is reported in the
// SecondaryScheduler's status with its reason and message, and nothing is applied: the
// scheduler keeps running with its last good configuration. A transient error is
// retried and reported nowhere but the log.
package refusal

import (
	"errors"
	"fmt"
	"strings"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
)

// Error is a refusal: why the desired scheduler cannot be run, in the terms of the
// SecondaryScheduler's Degraded condition.
type Error struct {
	// Reason is the Degraded condition's reason.
	Reason v1.ConditionReason
	// Message says what is wrong and what to do about it.
	Message string
}

func (e *Error) Error() string { return string(e.Reason) + ": " + e.Message }

// MaxMessageBytes bounds a refusal's message. Messages quote parts of the user's text; a
// condition message over 32768 bytes would make the API server refuse the status write
// that reports the refusal, so a long one is cut.
const MaxMessageBytes = 4096

// New is a refusal for reason, its message formatted and bounded.
func New(reason v1.ConditionReason, format string, args ...any) *Error {
	message := fmt.Sprintf(format, args...)
	if len(message) > MaxMessageBytes {
		message = strings.ToValidUTF8(message[:MaxMessageBytes], "") + " ... (truncated)"
	}
	return &Error{Reason: reason, Message: message}
}

// As returns the refusal in err's chain, if any.
func As(err error) (*Error, bool) {
	var refused *Error
	ok := errors.As(err, &refused)
	return refused, ok
}

// Is reports whether err is, or wraps, a refusal.
func Is(err error) bool {
	_, ok := As(err)
	return ok
}
