// Package statusapply writes the status of SecondarySchedulers, the last stage of a
// reconcile: with server-side apply of the status subresource, as the operator's one
// field manager, so that a status computed from a resource read a moment ago is written
// without a conflict to retry, and a field the operator stops setting goes away.
//
// Two things make that safe:
//   - The cache may not have the status this process just wrote when the next reconcile
//     reads the resource. Newest hands that reconcile the written status instead, so that
//     it computes transitions (condition times, Events) from what is really there, not
//     from an older status.
//   - A resource whose status an earlier version of the operator wrote with Update has
//     those fields owned by an Update manager, which server-side apply would never remove.
//     The first write of such a resource moves their ownership to the field manager
//     (k8s.io/client-go/util/csaupgrade) and applies again.
package statusapply

import (
	"context"
	"fmt"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/util/csaupgrade"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
)

// statusSubresource is the subresource status is written to.
const statusSubresource = "status"

// Writer writes SecondarySchedulers' status as FieldOwner. It is safe for concurrent
// use.
type Writer struct {
	// client applies status, and patches managed fields once per resource an earlier
	// version wrote status of with Update.
	client client.Client
	// fieldOwner is the field manager of the operator.
	fieldOwner string

	mu sync.Mutex
	// written is the status last written of each resource, until the cache has it.
	written map[types.NamespacedName]writtenStatus
}

// writtenStatus is a status as written, and the resourceVersion the write made.
type writtenStatus struct {
	uid             types.UID
	resourceVersion string
	status          v1.SecondarySchedulerStatus
}

// NewWriter is a Writer applying status with c as fieldOwner.
func NewWriter(c client.Client, fieldOwner string) *Writer {
	return &Writer{client: c, fieldOwner: fieldOwner, written: map[types.NamespacedName]writtenStatus{}}
}

// Newest sets cr's status, as read from the cache, to the status this process wrote
// last when the cache does not have that write yet (its resourceVersion is older). When
// resourceVersions cannot be compared, the cache's status is kept: it is then the newest
// known.
func (w *Writer) Newest(cr *v1.SecondaryScheduler) {
	key := client.ObjectKeyFromObject(cr)
	w.mu.Lock()
	defer w.mu.Unlock()
	last, found := w.written[key]
	if !found {
		return
	}
	if last.uid != cr.UID {
		delete(w.written, key) // another resource of the same name
		return
	}
	if order, err := resourceversion.CompareResourceVersion(cr.ResourceVersion, last.resourceVersion); err != nil || order >= 0 {
		delete(w.written, key) // the cache has caught up
		return
	}
	cr.Status = *last.status.DeepCopy()
}

// Forget drops what is remembered of the resource key, once it is gone.
func (w *Writer) Forget(key types.NamespacedName) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.written, key)
}

// Write applies status as cr's status. Fields of status the operator set before and
// status does not hold are removed.
func (w *Writer) Write(ctx context.Context, cr *v1.SecondaryScheduler, status *v1.SecondarySchedulerStatus) error {
	result, err := w.apply(ctx, cr, status)
	if err != nil {
		return err
	}
	if legacy := updateManagersOfStatus(result.GetManagedFields()); legacy.Len() > 0 {
		// Written with Update by an earlier version: ownership of those fields moves to the
		// field manager, and status is applied again to remove those it no longer sets.
		if err := w.upgradeManagedFields(ctx, result, legacy); err != nil {
			return err
		}
		if result, err = w.apply(ctx, cr, status); err != nil {
			return err
		}
	}
	w.remember(cr, result.GetResourceVersion(), status)
	return nil
}

// apply applies status as cr's status and returns the resource as the API server has it
// after the write.
func (w *Writer) apply(ctx context.Context, cr *v1.SecondaryScheduler, status *v1.SecondarySchedulerStatus) (*unstructured.Unstructured, error) {
	statusFields, err := runtime.DefaultUnstructuredConverter.ToUnstructured(status)
	if err != nil {
		return nil, fmt.Errorf("write status: %w", err)
	}
	object := &unstructured.Unstructured{Object: map[string]any{"status": statusFields}}
	object.SetGroupVersionKind(v1.GroupVersion.WithKind("SecondaryScheduler"))
	object.SetNamespace(cr.Namespace)
	object.SetName(cr.Name)
	// No precondition: the status subresource ignores metadata, the UID included. A
	// resource deleted and created anew under the same name while it was reconciled could
	// so be given the status computed for the old one, but only when the old one had no
	// finalizer (a refusal before the ownership check): with the finalizer, the old one
	// stays until a later reconcile of the same name removes it, and no two reconciles of
	// a name run at once. The creation of the new one brings its own reconcile.
	if err := w.client.Status().Apply(ctx, client.ApplyConfigurationFromUnstructured(object),
		client.FieldOwner(w.fieldOwner), client.ForceOwnership); err != nil {
		return nil, fmt.Errorf("write status: %w", err)
	}
	return object, nil
}

// upgradeManagedFields gives the field manager the fields of status that the Update
// managers named own.
func (w *Writer) upgradeManagedFields(ctx context.Context, current *unstructured.Unstructured, updateManagers sets.Set[string]) error {
	patch, err := csaupgrade.UpgradeManagedFieldsPatch(current, updateManagers, w.fieldOwner, csaupgrade.Subresource(statusSubresource))
	if err != nil {
		return fmt.Errorf("upgrade the managed fields of status: %w", err)
	}
	if patch == nil {
		return nil // nothing to hand over
	}
	// The patch replaces resourceVersion too: a resource changed since is refused with a
	// conflict, and the next reconcile tries again.
	target := &v1.SecondaryScheduler{}
	target.SetNamespace(current.GetNamespace())
	target.SetName(current.GetName())
	if err := w.client.Patch(ctx, target, client.RawPatch(types.JSONPatchType, patch)); err != nil {
		return fmt.Errorf("upgrade the managed fields of status: %w", err)
	}
	return nil
}

// updateManagersOfStatus are the field managers that wrote status with Update.
func updateManagersOfStatus(entries []metav1.ManagedFieldsEntry) sets.Set[string] {
	managers := sets.New[string]()
	for _, entry := range entries {
		if entry.Operation == metav1.ManagedFieldsOperationUpdate && entry.Subresource == statusSubresource {
			managers.Insert(entry.Manager)
		}
	}
	return managers
}

func (w *Writer) remember(cr *v1.SecondaryScheduler, resourceVersion string, status *v1.SecondarySchedulerStatus) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.written[client.ObjectKeyFromObject(cr)] = writtenStatus{uid: cr.UID, resourceVersion: resourceVersion, status: *status.DeepCopy()}
}
