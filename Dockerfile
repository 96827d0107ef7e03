# The operator's image: static binaries on distroless, running as non-root. /manager is the
# operator; /kubectl-secondary_scheduler renders offline (docker run --entrypoint
# /kubectl-secondary_scheduler IMAGE render -f ..., docs/render.md).
FROM golang:1.26 AS builder
WORKDIR /workspace
COPY go.mod go.sum ./
RUN go mod download
COPY main.go ./
COPY api/ api/
COPY cmd/ cmd/
COPY bindata/ bindata/
COPY controllers/ controllers/
COPY internal/ internal/
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o manager . && \
    CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o kubectl-secondary_scheduler ./cmd/kubectl-secondary_scheduler

FROM gcr.io/distroless/static:nonroot
WORKDIR /
COPY --from=builder /workspace/manager /manager
COPY --from=builder /workspace/kubectl-secondary_scheduler /kubectl-secondary_scheduler
USER 65532:65532
ENTRYPOINT ["/manager"]
