"""`make rehearse`: play a committed dist/<cluster>/ against real upstream components on loopback.

Phase 1 is the real API server (etcd and kube-apiserver built from the Go module proxy, see
docs/rehearse.md): every object is applied with server-side dry-run. The package is outside the
generator's pipeline (it reads only dist/ and the vendored CRD files), so nothing in slurmgen/ imports it.
"""
