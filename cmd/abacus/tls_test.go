package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// testPKI writes a CA, a server certificate for 127.0.0.1 and localhost
// and a client certificate, all signed by the CA, as PEM files in dir.
type testPKI struct{ ca, serverCert, serverKey, clientCert, clientKey string }

func newTestPKI(t *testing.T) testPKI {
	t.Helper()
	dir := t.TempDir()
	write := func(name, typ string, der []byte) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	// issue makes a certificate for tmpl signed by parent's key (itself
	// when parent is nil) and writes it and its key.
	issue := func(tmpl, parent *x509.Certificate, parentKey *ecdsa.PrivateKey, certFile, keyFile string) (*x509.Certificate, *ecdsa.PrivateKey, string, string) {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		if parent == nil {
			parent, parentKey = tmpl, k
		}
		tmpl.NotBefore, tmpl.NotAfter = time.Now().Add(-time.Hour), time.Now().Add(time.Hour)
		der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &k.PublicKey, parentKey)
		if err != nil {
			t.Fatal(err)
		}
		cert, err := x509.ParseCertificate(der)
		if err != nil {
			t.Fatal(err)
		}
		kder, err := x509.MarshalECPrivateKey(k)
		if err != nil {
			t.Fatal(err)
		}
		return cert, k, write(certFile, "CERTIFICATE", der), write(keyFile, "EC PRIVATE KEY", kder)
	}
	ca, caKey, caFile, _ := issue(&x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "abacus test CA"},
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}, nil, nil, "ca.pem", "ca-key.pem")
	leaf := func(serial int64, usage x509.ExtKeyUsage, certFile, keyFile string) (string, string) {
		_, _, c, k := issue(&x509.Certificate{
			SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: certFile},
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage},
			DNSNames: []string{"localhost"}, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		}, ca, caKey, certFile, keyFile)
		return c, k
	}
	p := testPKI{ca: caFile}
	p.serverCert, p.serverKey = leaf(2, x509.ExtKeyUsageServerAuth, "server.pem", "server-key.pem")
	p.clientCert, p.clientKey = leaf(3, x509.ExtKeyUsageClientAuth, "client.pem", "client-key.pem")
	return p
}

// serve speaks HTTPS with --http-tls-cert/--http-tls-key and, with
// --http-client-ca, admits only clients with a certificate that CA signed;
// the CLI reaches it with --ca-file, --cert-file and --key-file.
func TestServeOverTLSWithClientCertificates(t *testing.T) {
	t.Parallel()
	pki := newTestPKI(t)
	s := serveInProcess(t, map[string]string{"ABACUS_ADDR": "127.0.0.1:0"},
		"--data", filepath.Join(t.TempDir(), "d"), "--gc-interval", "0",
		"--http-tls-cert", pki.serverCert, "--http-tls-key", pki.serverKey, "--http-client-ca", pki.ca)
	defer s.stop(t)
	if !strings.HasPrefix(s.base, "https://") {
		t.Fatalf("serve with a certificate listens on %s", s.base)
	}
	trusted := map[string]string{"ABACUS_SERVER": s.base, "ABACUS_CA_FILE": pki.ca,
		"ABACUS_CERT_FILE": pki.clientCert, "ABACUS_KEY_FILE": pki.clientKey}
	if r := cli(trusted, "counter", "add", "likes", "5"); r.code != 0 {
		t.Fatalf("add over TLS with a client certificate: %+v", r)
	}
	if r := cli(trusted, "counter", "get", "likes"); r.code != 0 || r.stdout != "5\n" {
		t.Fatalf("get over TLS: %+v", r)
	}
	for _, tc := range []struct {
		name string
		env  map[string]string
		want string
	}{
		{"no client certificate", map[string]string{"ABACUS_SERVER": s.base, "ABACUS_CA_FILE": pki.ca}, "certificate"},
		{"the server's CA unknown", map[string]string{"ABACUS_SERVER": s.base, "ABACUS_CERT_FILE": pki.clientCert, "ABACUS_KEY_FILE": pki.clientKey}, "certificate"},
		{"plain HTTP", map[string]string{"ABACUS_SERVER": "http" + strings.TrimPrefix(s.base, "https")}, "HTTPS"},
	} {
		r := cli(tc.env, "counter", "add", "likes", "1")
		if r.code != exitError || !strings.Contains(r.stderr, tc.want) || strings.Contains(r.stderr, "may or may not") {
			t.Errorf("%s: %+v, want exit %d mentioning %q, and no doubt about the outcome", tc.name, r, exitError, tc.want)
		}
		r.oneLineError(t)
	}
	if r := cli(trusted, "counter", "get", "likes"); r.stdout != "5\n" {
		t.Fatalf("refused connections changed the counter: %+v", r)
	}
}

// The TLS flags come in pairs, a file that is not PEM is a usage error, and
// so is a quota that allows nothing.
func TestServeFlagMistakes(t *testing.T) {
	t.Parallel()
	pki := newTestPKI(t)
	for _, args := range [][]string{
		{"serve", "--http-tls-cert", pki.serverCert},
		{"serve", "--http-client-ca", pki.ca},
		{"serve", "--http-tls-cert", pki.serverCert, "--http-tls-key", pki.ca},
		{"serve", "--http-tls-cert", pki.serverCert, "--http-tls-key", pki.serverKey, "--http-client-ca", pki.serverKey},
		{"--ca-file", pki.serverKey, "counter", "get", "c"},
		{"--cert-file", pki.clientCert, "counter", "get", "c"},
		{"serve", "--max-namespaces", "0"},
		{"serve", "--cassandra", "127.0.0.1", "--password", "p", "--password-file", pki.ca},
		{"serve", "--cassandra", "127.0.0.1", "--password-file", filepath.Join(t.TempDir(), "missing")},
		{"serve", "--max-queues", "-2"},
		{"serve", "--shard-batch", "0"},
		{"serve", "--shard-batch", "65536"},
		{"bench", "--shard-batch", "0"},
		{"serve", "--event-batch", "0"},
		{"serve", "--event-batch", "65536"},
		{"bench", "--event-batch", "0"},
	} {
		if r := cli(nil, args...); r.code != exitUsage {
			t.Errorf("%v: %+v, want exit %d", args, r, exitUsage)
		}
	}
}

// A secret file holds the secret on its first line, as secret stores
// mount them (with or without a final newline, or CRLF).
func TestSecretFromFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for i, content := range []string{"s3cret", "s3cret\n", "s3cret\r\nnext line\n"} {
		file := filepath.Join(dir, fmt.Sprint(i))
		if err := os.WriteFile(file, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		if got, err := secret("", "--password", file, "--password-file"); err != nil || got != "s3cret" {
			t.Errorf("%q: %q, %v", content, got, err)
		}
	}
	if got, err := secret("given", "--password", "", "--password-file"); err != nil || got != "given" {
		t.Errorf("no file: %q, %v", got, err)
	}
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, []byte("\nx"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := secret("", "--password", empty, "--password-file"); err == nil {
		t.Error("an empty first line was taken as the password")
	}
}
