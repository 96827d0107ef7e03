package v1

import (
	"errors"

	kjson "sigs.k8s.io/json"
)

// UnmarshalJSON decodes a spec after checking its quantities (CheckQuantitiesJSON): one
// out of bounds, which resource.ParseQuantity would take minutes and hundreds of
// megabytes to parse, leaves the spec empty and Undecodable says why. The CRD refuses such
// quantities, but a resource stored before it did is still served to every client; the
// operator's cache decodes each one it lists or watches, and one of them would stall it
// or exceed its memory limit. It decodes as the API machinery does (case-sensitive field
// names, integers kept).
func (s *SecondarySchedulerSpec) UnmarshalJSON(data []byte) error {
	type plain SecondarySchedulerSpec
	if err := CheckQuantitiesJSON(data, (*plain)(nil)); err != nil {
		var quantity *QuantityError
		if !errors.As(err, &quantity) {
			return err
		}
		*s = SecondarySchedulerSpec{DecodeRefusal: quantity}
		return nil
	}
	*s = SecondarySchedulerSpec{}
	return kjson.UnmarshalCaseSensitivePreserveInts(data, (*plain)(s))
}

// Undecodable is why the spec was not decoded, nil when it was: a quantity out of bounds,
// as UnmarshalJSON found it. The operator runs nothing from such a spec.
func (s *SecondarySchedulerSpec) Undecodable() error {
	if s.DecodeRefusal == nil {
		return nil
	}
	return s.DecodeRefusal
}
