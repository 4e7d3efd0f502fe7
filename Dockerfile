# surge's container image: the static binary on scratch, nothing else to download.
# scripts/image.sh (make image) builds the binary (CGO_ENABLED=0) and stages the build context:
#   surge                 the binary
#   ca-certificates.crt   the build machine's CA bundle, for Kafka over TLS with public certificates
#   data/                 an empty directory, the volume's mount point, owned by the user below
# then runs: podman build --format docker -f Dockerfile -t surge CONTEXT
# (--format docker keeps the HEALTHCHECK, which the OCI format has no field for).
#
# Configure through SURGE_* variables. Off loopback surge needs an API key and TLS, or a
# TLS-terminating proxy in front (docs/OPERATIONS.md, "TLS"), e.g.:
#   podman run -p 8443:8080 -v surge-data:/data -v ./tls:/tls:ro -e SURGE_API_KEY=... \
#     -e SURGE_TLS_CERT=/tls/tls.crt -e SURGE_TLS_KEY=/tls/tls.key surge
FROM scratch
COPY surge /surge
COPY ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY --chown=65532:65532 data /data
# Not root: a numeric user, since scratch has no /etc/passwd.
USER 65532:65532
ENV SURGE_ADDR=0.0.0.0:8080 SURGE_DATA=/data
EXPOSE 8080
VOLUME ["/data"]
# surge healthcheck reads the same SURGE_ADDR and SURGE_TLS_* as serve: /readyz, over TLS when on.
HEALTHCHECK --interval=10s --timeout=6s --start-period=2m --retries=3 CMD ["/surge", "healthcheck"]
ENTRYPOINT ["/surge"]
CMD ["serve"]
