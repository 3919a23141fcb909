package pgtest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// TLSOptions says how StartTLSCluster sets up TLS and client authentication.
type TLSOptions struct {
	// CertPEM and KeyPEM are the server's certificate and private key (ssl_cert_file
	// and ssl_key_file), e.g. from CA.Issue.
	CertPEM, KeyPEM []byte
	// ClientCAPEM, when set, is ssl_ca_file: the CAs a client certificate must chain
	// to. The server then asks every TLS client for a certificate, which the cert
	// method of pg_hba.conf requires.
	ClientCAPEM []byte
	// HBA are the lines of pg_hba.conf after "local all all trust", which stays first
	// so that the Unix socket (SocketDSN) always lets a test in; nil trusts every TCP
	// connection from loopback addresses ("host all all 127.0.0.0/8 trust").
	HBA []string
	// ListenAddresses are the loopback addresses the server listens on (all on the
	// same port); nil is 127.0.0.1 alone. A second address lets a test connect by an
	// address the server's certificate does not name.
	ListenAddresses []string
}

// StartTLSCluster starts a private cluster (StartCluster) with ssl=on and the
// certificate, CA and pg_hba.conf of o, listening on o.ListenAddresses. TLS and
// pg_hba.conf survive Stop and Start, the extra listen addresses do not. It skips
// the test, saying why, when the PostgreSQL server binaries are not installed, and
// under -short.
func StartTLSCluster(t testing.TB, o TLSOptions) *Cluster {
	t.Helper()
	if testing.Short() {
		t.Skip("pgtest: a private PostgreSQL cluster is not started under -short")
	}
	if _, err := findBindir(); err != nil {
		t.Skipf("pgtest: no PostgreSQL server binaries to start a TLS cluster with: %v", err)
	}
	c := StartCluster(t)
	conf := []string{"ssl = on",
		"ssl_cert_file = '" + c.writeFile("server.crt", o.CertPEM, 0o644) + "'",
		"ssl_key_file = '" + c.writeFile("server.key", o.KeyPEM, 0o600) + "'"}
	if len(o.ClientCAPEM) > 0 {
		conf = append(conf, "ssl_ca_file = '"+c.writeFile("client-ca.crt", o.ClientCAPEM, 0o644)+"'")
	}
	hba := o.HBA
	if hba == nil {
		hba = []string{"host all all 127.0.0.0/8 trust"}
	}
	hba = append([]string{"local all all trust"}, hba...)
	conf = append(conf, "hba_file = '"+c.writeFile("pg_hba.conf", []byte(strings.Join(hba, "\n")+"\n"), 0o644)+"'")
	f, err := os.OpenFile(filepath.Join(c.data(), "postgresql.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	_, err = f.WriteString("\n" + strings.Join(conf, "\n") + "\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatalf("pgtest: write postgresql.conf: %v", err)
	}
	listen := o.ListenAddresses
	if listen == nil {
		listen = []string{"127.0.0.1"}
	}
	// The -o options replace those of the first start; ssl and hba_file come from
	// postgresql.conf, which the command line would override.
	opts := fmt.Sprintf("-c listen_addresses=%s -p %d -k %s -c fsync=off -c full_page_writes=off "+
		"-c max_connections=100", strings.Join(listen, ","), c.port, c.dir)
	logFile := filepath.Join(c.dir, "postgres.log")
	if err := c.run("pg_ctl", "-D", c.data(), "-l", logFile, "-m", "fast", "-w", "-t", "60", "-s",
		"-o", opts, "restart"); err != nil {
		log, _ := os.ReadFile(logFile)
		t.Fatalf("pgtest: restart with TLS: %v\n%s", err, log)
	}
	return c
}

// Port is the TCP port the cluster listens on.
func (c *Cluster) Port() int { return c.port }

// SocketDSN is a keyword/value connection string to the cluster's postgres database
// as the user postgres over its Unix socket, where no TLS or pg_hba.conf rule of a
// TLS cluster stands in the way.
func (c *Cluster) SocketDSN() string {
	return fmt.Sprintf("host=%s port=%d user=postgres dbname=postgres sslmode=disable", c.dir, c.port)
}

// writeFile writes a file into the cluster's directory, owned by the user the server
// runs as (PostgreSQL refuses a key file that another user owns), and returns its path.
func (c *Cluster) writeFile(name string, data []byte, mode os.FileMode) string {
	c.t.Helper()
	p := filepath.Join(c.dir, name)
	if err := os.WriteFile(p, data, mode); err != nil {
		c.t.Fatalf("pgtest: %v", err)
	}
	if c.asUser != "" {
		if out, err := exec.Command("chown", c.asUser+":", p).CombinedOutput(); err != nil {
			c.t.Fatalf("pgtest: chown %s: %v: %s", p, err, out)
		}
	}
	return p
}

// CertRole is the role StartTLSTestServer's server admits only with a client
// certificate (pg_hba.conf method cert) whose common name it is.
const CertRole = "queen_cert"

// StartTLSTestServer is the TLS server the broker's TLS tests share: a CA made for the
// test, a server certificate it signs for localhost and 127.0.0.1, the server also
// listening on 127.0.0.2 (a name the certificate does not have), role CertRole
// admitted by client certificate over TLS only, every other role trusted from
// loopback. It returns the server, its CA and a superuser connection over its Unix
// socket, closed with the test.
func StartTLSTestServer(t testing.TB) (*Cluster, *CA, *pgx.Conn) {
	t.Helper()
	ca := NewCA(t)
	cert, key := ca.Issue(t, "localhost", "127.0.0.1")
	srv := StartTLSCluster(t, TLSOptions{
		CertPEM: cert, KeyPEM: key, ClientCAPEM: ca.CertPEM,
		HBA:             []string{"hostssl all " + CertRole + " 127.0.0.0/8 cert", "host all all 127.0.0.0/8 trust"},
		ListenAddresses: []string{"127.0.0.1", "127.0.0.2"},
	})
	admin, err := pgx.Connect(t.Context(), srv.SocketDSN())
	if err != nil {
		t.Fatalf("pgtest: connect to the TLS server: %v", err)
	}
	t.Cleanup(func() { _ = admin.Close(context.WithoutCancel(t.Context())) })
	if _, err := admin.Exec(t.Context(), "CREATE ROLE "+CertRole+" LOGIN"); err != nil {
		t.Fatalf("pgtest: create role %s: %v", CertRole, err)
	}
	return srv, ca, admin
}
