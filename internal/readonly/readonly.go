// Package readonly gives the read-only stages of a reconcile (gathering, the ownership
// check, observing) the reading half of a client and nothing more: a Wrap-ped reader
// exposes Get and List, and its value cannot be asserted back into the client.Client it
// may have been made from. Package readonlytest proves, over a stage package's own types
// and code, that it can reach no writer.
package readonly

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Wrap is reader's Get and List, and nothing else of it.
func Wrap(reader client.Reader) client.Reader {
	if reader == nil {
		return nil
	}
	return wrapped{reader: reader}
}

type wrapped struct{ reader client.Reader }

func (r wrapped) Get(ctx context.Context, key client.ObjectKey, object client.Object, options ...client.GetOption) error {
	return r.reader.Get(ctx, key, object, options...)
}

func (r wrapped) List(ctx context.Context, list client.ObjectList, options ...client.ListOption) error {
	return r.reader.List(ctx, list, options...)
}
