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
	"slices"
	"strings"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
)

// Error is a refusal: why the desired scheduler cannot be run, in the terms of the
// SecondaryScheduler's Degraded condition.
type Error struct {
	// Reason is the Degraded condition's reason.
	Reason v1.ConditionReason
	// Message says what is wrong and what to do about it, and names the refusals of Also.
	Message string
	// Also are refusals found beside this one, independently of it (Join).
	Also []*Error
	// own is this refusal's own message, before it names Also's; empty without Also.
	own string
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

// Join is one refusal for every refusal among errs, for problems found independently of
// each other, so that the user fixes them in one round rather than one per round: the
// first keeps its reason (the conditions' reason), and its message goes on to name the
// others, which Also holds. A transient error among errs is returned alone, since it is
// retried and the refusals are found again then. Nil errs are skipped; Join of none is
// nil.
func Join(errs ...error) error {
	var first *Error
	var also []*Error
	for _, err := range errs {
		if err == nil {
			continue
		}
		refused, ok := As(err)
		if !ok {
			return err
		}
		if first == nil {
			first = refused
			continue
		}
		also = append(also, refused)
		also = append(also, refused.Also...)
	}
	if first == nil {
		return nil
	}
	if len(also) == 0 {
		return first
	}
	also = append(slices.Clone(first.Also), also...)
	message := first.Message
	if first.own != "" {
		message = first.own
	}
	sentence := strings.TrimRight(message, " ")
	if !strings.HasSuffix(sentence, ".") {
		sentence += "."
	}
	joined := New(first.Reason, "%s", sentence+alsoSentence(also))
	joined.Also, joined.own = also, message
	return joined
}

// alsoSentence names the further refusals after the first one's message.
func alsoSentence(also []*Error) string {
	var b strings.Builder
	if len(also) == 1 {
		b.WriteString(" Also to fix: ")
	} else {
		fmt.Fprintf(&b, " Also to fix, %d more: ", len(also))
	}
	for i, refused := range also {
		if i > 0 {
			b.WriteString(" ")
		}
		fmt.Fprintf(&b, "(%d) %s: %s", i+1, refused.Reason, refused.Message)
	}
	return b.String()
}

// Reasons are the reasons of err's refusal and of those it was joined with, first to
// last; none when err holds no refusal.
func Reasons(err error) []v1.ConditionReason {
	refused, ok := As(err)
	if !ok {
		return nil
	}
	reasons := []v1.ConditionReason{refused.Reason}
	for _, other := range refused.Also {
		reasons = append(reasons, other.Reason)
	}
	return reasons
}

// OwnMessage is the refusal's message without the naming of the refusals joined to it.
func (e *Error) OwnMessage() string {
	if e.own != "" {
		return e.own
	}
	return e.Message
}
