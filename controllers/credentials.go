package controllers

import (
	"context"
	"errors"
	"fmt"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/gather"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/ownership"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/refusal"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/render"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/report"
)

// credentials returns the bound token a scheduler that authenticates with one is to
// present: the one gathering found kept, or, when there is none or it is due or no
// longer valid, a new one. For that it writes the ServiceAccount and its
// ClusterRoleBinding as the apply stage does (applyIfChanged), then requests one token.
// What it writes goes into live, which the apply stage then finds as written. Nil when
// the scheduler presents no bound token.
func (r *writer) credentials(ctx context.Context, cr *v1.SecondaryScheduler, access *gather.MetricsAccess,
	rendered *render.Result, live ownership.Live, finalizer *finalizerPatch) (*render.BoundToken, error) {
	identity := access.Identity
	if identity == nil {
		return nil, nil
	}
	if identity.Token != nil {
		valid, err := r.tokenStillValid(ctx, cr, identity.Token)
		if err != nil || valid {
			return identity.Token, err
		}
	}
	for _, object := range rendered.Objects {
		if render.IsMetricsIdentityObject(cr, object) {
			if err := r.writeInto(ctx, cr, object, live, finalizer); err != nil {
				return nil, err
			}
		}
	}
	keeper, err := r.tokenSecret(ctx, cr, rendered, live)
	if err != nil {
		return nil, err
	}
	return r.requestToken(ctx, cr, access.Auth, keeper)
}

// tokenSecret is the Secret that keeps cr's metrics token, which the token is bound to:
// deleting it (or cr, which owns it) ends the token at once, rather than at its expiry.
// One that live holds (the ownership check proved it cr's) is left as it is, since it
// may still hold a token the scheduler uses while a new one is requested; otherwise it
// is created as rendered, without a token (createIfAbsent).
func (r *writer) tokenSecret(ctx context.Context, cr *v1.SecondaryScheduler, rendered *render.Result,
	live ownership.Live) (client.Object, error) {
	for _, object := range rendered.Objects {
		if !render.IsMetricsTokenSecret(cr, object) {
			continue
		}
		if kept := live[ownership.ObjectID(object)]; kept != nil {
			return kept, nil
		}
		created, err := withAppliedHash(object)
		if err != nil {
			return nil, err
		}
		existing, err := r.createIfAbsent(ctx, cr, created)
		if err != nil {
			return nil, err
		}
		if existing != nil {
			return existing, nil
		}
		live[ownership.ObjectID(object)] = created
		return created, nil
	}
	return nil, fmt.Errorf("no Secret to keep the metrics token of %s was rendered", client.ObjectKeyFromObject(cr))
}

// keepToken writes the token Secret of rendered, which holds a token just requested, at
// once: a failure further on then does not cost another token.
func (r *writer) keepToken(ctx context.Context, cr *v1.SecondaryScheduler, rendered *render.Result, live ownership.Live,
	finalizer *finalizerPatch) error {
	for _, object := range rendered.Objects {
		if render.IsMetricsTokenSecret(cr, object) {
			if err := r.writeInto(ctx, cr, object, live, finalizer); err != nil {
				return err
			}
		}
	}
	return nil
}

// writeInto writes object as the apply stage does (applyIfChanged, which waits for cr's
// finalizer if the object needs it, as the metrics ClusterRoleBinding does), and records
// what it wrote in live, for the apply stage to find unchanged.
func (r *writer) writeInto(ctx context.Context, cr *v1.SecondaryScheduler, object *unstructured.Unstructured, live ownership.Live,
	finalizer *finalizerPatch) error {
	written, err := r.applyIfChanged(ctx, cr, object, live[ownership.ObjectID(object)], finalizer)
	if err != nil {
		return err
	}
	if written != nil {
		live[ownership.ObjectID(object)] = written
	}
	return nil
}

// defaultTokenExpiration is the lifetime asked for a metrics token when the resource
// gives none (the API default also says so).
const defaultTokenExpiration = 24 * time.Hour

// requestToken asks the TokenRequest API for a token of cr's metrics ServiceAccount,
// which must exist (the credentials step applied it), bound to keeper, the Secret that
// keeps it. It asks for the API server's own audiences: the providers that read metrics
// behind kube-rbac-proxy or OpenShift's thanos-querier authenticate the token with a
// TokenReview of those.
func (r *writer) requestToken(ctx context.Context, cr *v1.SecondaryScheduler,
	auth v1.ServiceAccountTokenAuth, keeper client.Object) (*render.BoundToken, error) {
	account := &corev1.ServiceAccount{}
	accountKey := types.NamespacedName{Namespace: cr.Namespace, Name: render.MetricsServiceAccountName(cr)}
	if err := r.APIReader.Get(ctx, accountKey, account); err != nil {
		return nil, fmt.Errorf("read ServiceAccount %s: %w", accountKey, err)
	}
	if !ownership.OwnedBy(account, cr) {
		return nil, fmt.Errorf("ServiceAccount %s was replaced by someone else's: %w", accountKey, errWaiting)
	}
	expiration := ptr.Deref(auth.ExpirationSeconds, int64(defaultTokenExpiration/time.Second))
	request := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &expiration,
		BoundObjectRef: &authenticationv1.BoundObjectReference{APIVersion: "v1", Kind: "Secret", Name: keeper.GetName(), UID: keeper.GetUID()}}}
	issued := r.now()
	if err := r.SubResource("token").Create(ctx, account, request); err != nil {
		if apierrors.IsForbidden(err) || apierrors.IsInvalid(err) || apierrors.IsBadRequest(err) {
			return nil, refusal.New(v1.ReasonTokenRequestFailed,
				"the API server refused a token for ServiceAccount %s: %s", accountKey, apiErrorSummary(err))
		}
		return nil, fmt.Errorf("request a token for ServiceAccount %s: %w", accountKey, err)
	}
	expires := request.Status.ExpirationTimestamp.Time
	token := &render.BoundToken{Token: request.Status.Token, ServiceAccountUID: string(account.UID),
		ExpiresAt: expires, RenewAt: render.RenewTime(issued, expires)}
	logf.FromContext(ctx).Info("requested a new metrics token", "serviceAccount", accountKey,
		"expiresAt", expires.UTC().Format(time.RFC3339), "renewAt", token.RenewAt.UTC().Format(time.RFC3339))
	return token, nil
}

// apiErrorSummary is an API error's reason and message, which the API server writes (no
// echo of anything a third party sent).
func apiErrorSummary(err error) string {
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		return fmt.Sprintf("%s: %s", status.Status().Reason, status.Status().Message)
	}
	return err.Error()
}

// tokenStillValid reports whether the API server still accepts token as the metrics
// ServiceAccount's. It asks only after the endpoint refused the token, so that a token
// revoked or overwritten is replaced, while a refusal for want of permissions (the token
// is fine, the ClusterRole is not) does not churn tokens and restart the scheduler.
func (r *writer) tokenStillValid(ctx context.Context, cr *v1.SecondaryScheduler, token *render.BoundToken) (bool, error) {
	if !report.ReportedUnauthorized(cr) {
		return true, nil
	}
	review := &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: token.Token}}
	if err := r.Create(ctx, review); err != nil {
		return false, fmt.Errorf("review the metrics token: %w", err)
	}
	want := "system:serviceaccount:" + cr.Namespace + ":" + render.MetricsServiceAccountName(cr)
	if !review.Status.Authenticated || review.Status.User.Username != want {
		logf.FromContext(ctx).Info("the metrics token is no longer valid; requesting a new one", "serviceAccount", want)
		return false, nil
	}
	return true, nil
}
