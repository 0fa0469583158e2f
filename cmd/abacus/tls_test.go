package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
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
	key := func() *ecdsa.PrivateKey {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	caKey := key()
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "abacus test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatal(err)
	}
	leaf := func(serial int64, name string, usage x509.ExtKeyUsage, certFile, keyFile string) (string, string) {
		k := key()
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: name},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage},
			DNSNames: []string{"localhost"}, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &k.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		kder, err := x509.MarshalECPrivateKey(k)
		if err != nil {
			t.Fatal(err)
		}
		return write(certFile, "CERTIFICATE", der), write(keyFile, "EC PRIVATE KEY", kder)
	}
	p := testPKI{ca: write("ca.pem", "CERTIFICATE", caDER)}
	p.serverCert, p.serverKey = leaf(2, "abacus server", x509.ExtKeyUsageServerAuth, "server.pem", "server-key.pem")
	p.clientCert, p.clientKey = leaf(3, "abacus client", x509.ExtKeyUsageClientAuth, "client.pem", "client-key.pem")
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
		{"serve", "--max-queues", "-2"},
	} {
		if r := cli(nil, args...); r.code != exitUsage {
			t.Errorf("%v: %+v, want exit %d", args, r, exitUsage)
		}
	}
}
