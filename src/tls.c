/* SPDX-License-Identifier: BSD-3-Clause */
#include "flowslot/tls.h"

#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509_vfy.h>
#include <openssl/x509v3.h>

#include "flowslot/fstime.h"
#include "flowslot/trust.h"

/* Linking libssl would map libssl and libcrypto into every process that loads the module, at
   every login (about 2.5 ms a process on the machine it was measured on): it is opened here,
   for one connection, and its functions are looked up into that connection. OpenSSL 3 pins
   itself in memory once initialised, so closing the handle unloads nothing that registered an
   exit handler. */
#define TLS_LIBSSL "libssl.so." OPENSSL_MSTR(OPENSSL_VERSION_MAJOR)
#define TLS_KEY_MAX 65536 /* bytes of tls_key_file= */
#define TLS_PEM_MAX                                                                                \
	(1 << 20)	   /* of tls_ca_file= or tls_cert_file= (Debian's bundle of every          \
			      public CA: 220 KB) */
#define TLS_PAIR_BUF 34000 /* each way of the BIO pair: two TLS records */

/* The OpenSSL functions used, each with its type. */
#define TLS_FUNCTIONS(X)                                                                           \
	X(const SSL_METHOD *, TLS_client_method, (void))                                           \
	X(SSL_CTX *, SSL_CTX_new, (const SSL_METHOD *))                                            \
	X(void, SSL_CTX_free, (SSL_CTX *))                                                         \
	X(long, SSL_CTX_ctrl, (SSL_CTX *, int, long, void *))                                      \
	X(void, SSL_CTX_set_verify, (SSL_CTX *, int, SSL_verify_cb))                               \
	X(int, SSL_CTX_set_default_verify_paths, (SSL_CTX *))                                      \
	X(int, SSL_CTX_load_verify_dir, (SSL_CTX *, const char *))                                 \
	X(X509_STORE *, SSL_CTX_get_cert_store, (const SSL_CTX *))                                 \
	X(int, X509_STORE_add_cert, (X509_STORE *, X509 *))                                        \
	X(int, SSL_CTX_use_certificate, (SSL_CTX *, X509 *))                                       \
	X(X509 *, PEM_read_bio_X509, (BIO *, X509 **, pem_password_cb *, void *))                  \
	X(X509 *, PEM_read_bio_X509_AUX, (BIO *, X509 **, pem_password_cb *, void *))              \
	X(void, X509_free, (X509 *))                                                               \
	X(int, SSL_CTX_use_PrivateKey, (SSL_CTX *, EVP_PKEY *))                                    \
	X(int, SSL_CTX_check_private_key, (const SSL_CTX *))                                       \
	X(SSL *, SSL_new, (SSL_CTX *))                                                             \
	X(void, SSL_free, (SSL *))                                                                 \
	X(void, SSL_set_bio, (SSL *, BIO *, BIO *))                                                \
	X(int, SSL_connect, (SSL *))                                                               \
	X(int, SSL_read, (SSL *, void *, int))                                                     \
	X(int, SSL_write, (SSL *, const void *, int))                                              \
	X(int, SSL_get_error, (const SSL *, int))                                                  \
	X(long, SSL_ctrl, (SSL *, int, long, void *))                                              \
	X(X509_VERIFY_PARAM *, SSL_get0_param, (SSL *))                                            \
	X(long, SSL_get_verify_result, (const SSL *))                                              \
	X(int, X509_VERIFY_PARAM_set1_host, (X509_VERIFY_PARAM *, const char *, size_t))           \
	X(void, X509_VERIFY_PARAM_set_hostflags, (X509_VERIFY_PARAM *, unsigned int))              \
	X(int, X509_VERIFY_PARAM_set1_ip_asc, (X509_VERIFY_PARAM *, const char *))                 \
	X(const char *, X509_verify_cert_error_string, (long))                                     \
	X(unsigned long, ERR_get_error, (void))                                                    \
	X(unsigned long, ERR_peek_error, (void))                                                   \
	X(const char *, ERR_reason_error_string, (unsigned long))                                  \
	X(void, ERR_clear_error, (void))                                                           \
	X(int, BIO_new_bio_pair, (BIO **, size_t, BIO **, size_t))                                 \
	X(size_t, BIO_ctrl_pending, (BIO *))                                                       \
	X(size_t, BIO_ctrl_get_write_guarantee, (BIO *))                                           \
	X(int, BIO_read, (BIO *, void *, int))                                                     \
	X(int, BIO_write, (BIO *, const void *, int))                                              \
	X(int, BIO_free, (BIO *))                                                                  \
	X(BIO *, BIO_new_mem_buf, (const void *, int))                                             \
	X(EVP_PKEY *, PEM_read_bio_PrivateKey, (BIO *, EVP_PKEY **, pem_password_cb *, void *))    \
	X(void, EVP_PKEY_free, (EVP_PKEY *))

struct tls_fn {
#define TLS_FIELD(ret, name, args) ret(*name) args;
	TLS_FUNCTIONS(TLS_FIELD)
#undef TLS_FIELD
};

/* One TLS connection. OpenSSL never touches the socket: it talks to one end of a BIO pair,
   and tls_pump carries the other end's bytes with send(MSG_NOSIGNAL) and recv. A socket BIO
   would write(), and a server gone away would raise SIGPIPE in sshd; a BIO of our own would
   need OpenSSL's functions in its callbacks, which have nowhere to find them but global
   state. */
struct tls_conn {
	void *lib;
	struct tls_fn fn;
	SSL_CTX *ctx;
	SSL *ssl;
	BIO *net; /* our end of the pair; SSL owns the other */
	int fd;
	int64_t deadline_us;
	size_t received;     /* bytes read from the socket */
	unsigned char first; /* the first of them: a TLS record starts with 0x14 to 0x17 */
	bool closed;	     /* the server closed the connection */
	bool timed_out;
	char *why;
	size_t whysz;
};

static void tls_why(struct tls_conn *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void tls_why(struct tls_conn *t, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(t->why, t->whysz, fmt, ap);
	va_end(ap);
}

/* Why OpenSSL failed: the reason of the first error it queued (those after it say where the
   failure was passed up: "system lib" for a file that could not be opened), a system error as
   strerror says it, or what; the queue is left empty. */
static const char *tls_ssl_reason(struct tls_conn *t, const char *what)
{
	const char *r = NULL;
	unsigned long e;

	while (r == NULL && (e = t->fn.ERR_get_error()) != 0)
		r = ERR_SYSTEM_ERROR(e) ? strerror(ERR_GET_REASON(e))
					: t->fn.ERR_reason_error_string(e);
	t->fn.ERR_clear_error();
	return r != NULL ? r : what;
}

/* s as a cause shows it, in out (outsz bytes, 8 at least): bytes the log would escape become
   '?', and a longer s loses its middle to "...", so that what follows it in the cause is never
   cut off. */
static const char *tls_shown(const char *s, char *out, size_t outsz)
{
	size_t n = strlen(s), head = n, tail = 0;
	size_t o = 0;

	if (n >= outsz) {
		tail = (outsz - 4) * 2 / 3; /* a path's end names the file */
		head = outsz - 4 - tail;
	}
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (i == head && tail > 0) {
			memcpy(out + o, "...", 3);
			o += 3;
			i = n - tail;
			c = (unsigned char)s[i];
		}
		out[o++] = c >= 0x20 && c < 0x7f && c != '\\' ? (char)c : '?';
	}
	out[o] = '\0';
	return out;
}

/* "option: cannot use path: cause", path shortened as need be for all of it to fit in
   t->why. */
static void tls_why_file(struct tls_conn *t, const char *option, const char *path,
			 const char *cause)
{
	char shown[OPT_DIR_MAX + 1];
	size_t fixed = sizeof(": cannot use : ") - 1 + strlen(option) + strlen(cause);
	size_t room = t->whysz > fixed + 8 ? t->whysz - fixed : 8; /* the path's, with a NUL */

	tls_why(t, "%s: cannot use %s: %s", option,
		tls_shown(path, shown, room < sizeof(shown) ? room : sizeof(shown)), cause);
}

static int tls_load(struct tls_conn *t)
{
	t->lib = dlopen(TLS_LIBSSL, RTLD_NOW | RTLD_LOCAL);
	if (t->lib == NULL) {
		tls_why(t, "cannot load %s: %s", TLS_LIBSSL, dlerror());
		return -1;
	}
#define TLS_LOOKUP(ret, name, args)                                                                \
	if ((*(void **)&t->fn.name = dlsym(t->lib, #name)) == NULL) {                              \
		tls_why(t, "%s has no %s", TLS_LIBSSL, #name);                                     \
		return -1;                                                                         \
	}
	TLS_FUNCTIONS(TLS_LOOKUP)
#undef TLS_LOOKUP
	return 0;
}

/* Waits until the socket is ready for events, or the deadline passes. */
static int tls_poll(struct tls_conn *t, short events)
{
	if (fstime_poll(t->fd, events, t->deadline_us) == 0)
		return 0;
	if (errno == ETIMEDOUT) {
		t->timed_out = true;
		tls_why(t, "timed out");
	} else {
		tls_why(t, "poll failed: %s", strerror(errno));
	}
	return -1;
}

/* After the server hung up on a send: why, if it sent an alert first (TLS 1.3 servers refuse
   a client certificate after the client has finished its handshake). */
static void tls_last_words(struct tls_conn *t)
{
	unsigned char buf[4096];
	size_t room = t->fn.BIO_ctrl_get_write_guarantee(t->net);
	ssize_t n = recv(t->fd, buf, room < sizeof(buf) ? room : sizeof(buf), MSG_DONTWAIT);
	const char *r;

	if (n <= 0 || t->fn.BIO_write(t->net, buf, (int)n) != (int)n)
		return;
	t->fn.ERR_clear_error();
	if (t->fn.SSL_read(t->ssl, buf, 1) <= 0 && (r = tls_ssl_reason(t, NULL)) != NULL)
		tls_why(t, "the server closed the connection: %s", r);
	t->fn.ERR_clear_error();
}

/* Sends whatever OpenSSL has written to the pair. */
static int tls_flush(struct tls_conn *t)
{
	unsigned char buf[4096];
	size_t pending;

	while ((pending = t->fn.BIO_ctrl_pending(t->net)) > 0) {
		int n = t->fn.BIO_read(t->net, buf,
				       (int)(pending < sizeof(buf) ? pending : sizeof(buf)));

		for (int off = 0; off < n;) {
			ssize_t sent =
			    send(t->fd, buf + off, (size_t)(n - off), MSG_NOSIGNAL | MSG_DONTWAIT);

			if (sent >= 0) {
				off += (int)sent;
			} else if (errno == EAGAIN || errno == EWOULDBLOCK) {
				if (tls_poll(t, POLLOUT) != 0)
					return -1;
			} else if (errno == EPIPE || errno == ECONNRESET) {
				t->closed = true;
				tls_why(t, "the server closed the connection");
				tls_last_words(t);
				return -1;
			} else if (errno != EINTR) {
				tls_why(t, "send failed: %s", strerror(errno));
				return -1;
			}
		}
	}
	return 0;
}

/* Reads what the server sent next into the pair, waiting for it. */
static int tls_fill(struct tls_conn *t)
{
	unsigned char buf[4096];
	size_t room = t->fn.BIO_ctrl_get_write_guarantee(t->net);
	ssize_t n;

	if (room > sizeof(buf))
		room = sizeof(buf);
	if (room == 0) { /* OpenSSL reads whole records, well under TLS_PAIR_BUF */
		tls_why(t, "TLS buffer full");
		return -1;
	}
	for (;;) {
		if (tls_poll(t, POLLIN) != 0)
			return -1;
		n = recv(t->fd, buf, room, MSG_DONTWAIT);
		if (n > 0)
			break;
		if (n == 0) {
			t->closed = true;
			tls_why(t, "the server closed the connection");
			return -1;
		}
		if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
			tls_why(t, "recv failed: %s", strerror(errno));
			return -1;
		}
	}
	if (t->received == 0)
		t->first = buf[0];
	t->received += (size_t)n;
	if (t->fn.BIO_write(t->net, buf, (int)n) != (int)n) {
		tls_why(t, "BIO_write failed");
		return -1;
	}
	return 0;
}

/* Runs one OpenSSL call (rc is what it returned) to its end: sends what it wrote, and when it
   wants to read, reads. Returns 1 when done, 0 to call again, -1 on failure. */
static int tls_step(struct tls_conn *t, int rc)
{
	int err = t->fn.SSL_get_error(t->ssl, rc);

	if (tls_flush(t) != 0)
		return -1;
	switch (err) {
	case SSL_ERROR_NONE:
		return 1;
	case SSL_ERROR_WANT_WRITE: /* the pair was full: flushed now */
		return 0;
	case SSL_ERROR_WANT_READ:
		return tls_fill(t) == 0 ? 0 : -1;
	case SSL_ERROR_ZERO_RETURN:
		t->closed = true;
		tls_why(t, "the server closed the connection");
		return -1;
	default:
		tls_why(t, "%s", tls_ssl_reason(t, "TLS failed"));
		return -1;
	}
}

/* A PEM file never asks for a passphrase: OpenSSL's own prompt would read the terminal. */
static int tls_no_passphrase(char *buf, int size, int rwflag, void *u)
{
	(void)buf, (void)size, (void)rwflag, (void)u;
	return -1;
}

/* Reads option's file path into memory, at most max bytes, if it passes trust_open_root_file
   (secret: readable by root alone): a link, a FIFO or a device, a file someone else can write,
   are refused before anything is read, never waited on. Returns the bytes, *len of them and a
   NUL, for the caller to free (and wipe, when secret), or NULL with the cause in t->why. */
static char *tls_read_file(struct tls_conn *t, const char *option, const char *path, bool secret,
			   size_t max, size_t *len)
{
	struct stat st;
	const char *why = NULL;
	char *buf = NULL;
	size_t n = 0, size = 0;
	int fd = trust_open_root_file(path, secret, &st, &why);

	if (fd < 0) {
		tls_why_file(t, option, path, why);
		return NULL;
	}
	if (st.st_size > (off_t)max) {
		why = max == TLS_KEY_MAX ? "larger than 64 KiB" : "larger than 1 MiB";
	} else if ((buf = malloc((size = (size_t)st.st_size + 1))) == NULL) {
		why = "out of memory";
	} else {
		/* One byte more than the file had: a file that grows is not taken half read. */
		for (ssize_t r; n < size; n += (size_t)r) {
			r = read(fd, buf + n, size - n);
			if (r == 0)
				break;
			if (r < 0 && errno == EINTR) {
				r = 0;
			} else if (r < 0) {
				why = strerror(errno);
				break;
			}
		}
		if (why == NULL && n == 0)
			why = "empty";
		else if (why == NULL && n == size)
			why = "changed while it was read";
	}
	close(fd);
	if (why != NULL) {
		tls_why_file(t, option, path, why);
		if (buf != NULL && secret)
			explicit_bzero(buf, size);
		free(buf);
		return NULL;
	}
	buf[n] = '\0';
	*len = n;
	return buf;
}

/* Takes the n-th certificate read from a file, x, which it frees: into the trust store, or,
   for chain, as the client certificate (the first) or its chain (the others). */
static int tls_take_cert(struct tls_conn *t, bool chain, int n, X509 *x)
{
	int ok;

	if (!chain)
		ok = t->fn.X509_STORE_add_cert(t->fn.SSL_CTX_get_cert_store(t->ctx), x) == 1;
	else if (n == 0)
		ok = t->fn.SSL_CTX_use_certificate(t->ctx, x) == 1;
	else if (t->fn.SSL_CTX_ctrl(t->ctx, SSL_CTRL_CHAIN_CERT, 0, x) == 1)
		return 0; /* SSL_CTX_add0_chain_cert: the context owns x now */
	else
		ok = 0;
	t->fn.X509_free(x);
	return ok ? 0 : -1;
}

/* Loads the PEM certificates of option's file path, as SSL_CTX_load_verify_file (chain
   false: each a trust anchor) or SSL_CTX_use_certificate_chain_file (chain: the client
   certificate, then its chain) would, but from the file tls_read_file read. */
static int tls_load_certs(struct tls_conn *t, const char *option, const char *path, bool chain)
{
	size_t len = 0;
	char *pem = tls_read_file(t, option, path, false, TLS_PEM_MAX, &len);
	BIO *bio = NULL;
	unsigned long e;
	X509 *x;
	bool refused = false; /* a certificate read, but not taken */
	int n = 0, rc = -1;

	if (pem == NULL)
		return -1;
	t->fn.ERR_clear_error();
	if ((bio = t->fn.BIO_new_mem_buf(pem, (int)len)) == NULL) {
		tls_why_file(t, option, path, tls_ssl_reason(t, "out of memory"));
		free(pem);
		return -1;
	}
	/* The first with its trust settings (TRUSTED CERTIFICATE), as OpenSSL reads either. */
	while ((x = (n == 0 || !chain ? t->fn.PEM_read_bio_X509_AUX : t->fn.PEM_read_bio_X509)(
		    bio, NULL, tls_no_passphrase, NULL)) != NULL) {
		if (tls_take_cert(t, chain, n, x) != 0) {
			refused = true;
			break;
		}
		n++;
	}
	/* The end of the file: no PEM block left is the one error. */
	e = t->fn.ERR_peek_error();
	if (!refused && ERR_GET_LIB(e) == ERR_LIB_PEM && ERR_GET_REASON(e) == PEM_R_NO_START_LINE)
		t->fn.ERR_clear_error();
	if (refused || t->fn.ERR_peek_error() != 0)
		tls_why_file(t, option, path, tls_ssl_reason(t, "failed"));
	else if (n == 0)
		tls_why_file(t, option, path, "no certificate in it (PEM)");
	else
		rc = 0;
	t->fn.BIO_free(bio);
	free(pem);
	return rc;
}

/* Loads tls_key_file=, which must pass password_file='s checks: root's, read by no one else. */
static int tls_use_key(struct tls_conn *t, const char *path)
{
	size_t len = 0;
	char *pem = tls_read_file(t, "tls_key_file", path, true, TLS_KEY_MAX, &len);
	BIO *bio = NULL;
	EVP_PKEY *key = NULL;
	int rc = -1;

	if (pem == NULL)
		return -1;
	t->fn.ERR_clear_error();
	if ((bio = t->fn.BIO_new_mem_buf(pem, (int)len)) == NULL ||
	    (key = t->fn.PEM_read_bio_PrivateKey(bio, NULL, tls_no_passphrase, NULL)) == NULL) {
		tls_why_file(t, "tls_key_file", path,
			     tls_ssl_reason(t, "no private key (one without a passphrase)"));
	} else if (t->fn.SSL_CTX_use_PrivateKey(t->ctx, key) != 1 ||
		   t->fn.SSL_CTX_check_private_key(t->ctx) != 1) {
		tls_why_file(t, "tls_key_file", path,
			     tls_ssl_reason(t, "does not match tls_cert_file"));
	} else {
		rc = 0;
	}
	t->fn.EVP_PKEY_free(key);
	t->fn.BIO_free(bio);
	explicit_bzero(pem, len);
	free(pem);
	return rc;
}

/* tls_ca_dir=: the directory itself must pass trust_open_root_dir. Its files are opened by
   OpenSSL, by hashed name, when it looks for an issuer. */
static int tls_use_ca_dir(struct tls_conn *t, const char *dir)
{
	struct stat st;
	const char *why = NULL;
	int fd = trust_open_root_dir(dir, &st, &why);

	if (fd < 0) {
		tls_why_file(t, "tls_ca_dir", dir, why);
		return -1;
	}
	close(fd);
	t->fn.ERR_clear_error();
	if (t->fn.SSL_CTX_load_verify_dir(t->ctx, dir) != 1) {
		tls_why_file(t, "tls_ca_dir", dir, tls_ssl_reason(t, "failed"));
		return -1;
	}
	return 0;
}

/* The context: TLS 1.2 at least, the trust anchors, the client certificate. */
static int tls_context(struct tls_conn *t, const struct opt_tls *o)
{
	SSL_CTX *ctx = t->fn.SSL_CTX_new(t->fn.TLS_client_method());

	t->ctx = ctx;
	if (ctx == NULL) {
		tls_why(t, "SSL_CTX_new: %s", tls_ssl_reason(t, "failed"));
		return -1;
	}
	if (t->fn.SSL_CTX_ctrl(ctx, SSL_CTRL_SET_MIN_PROTO_VERSION, TLS1_2_VERSION, NULL) != 1) {
		tls_why(t, "cannot ask for TLS 1.2 at least: %s", tls_ssl_reason(t, "failed"));
		return -1;
	}
	t->fn.SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
	if (o->ca_file[0] == '\0' && o->ca_dir[0] == '\0' &&
	    t->fn.SSL_CTX_set_default_verify_paths(ctx) != 1) {
		tls_why(t, "cannot load the system's trust store: %s", tls_ssl_reason(t, "failed"));
		return -1;
	}
	if (o->ca_file[0] != '\0' && tls_load_certs(t, "tls_ca_file", o->ca_file, false) != 0)
		return -1;
	if (o->ca_dir[0] != '\0' && tls_use_ca_dir(t, o->ca_dir) != 0)
		return -1;
	if (o->cert_file[0] == '\0')
		return 0;
	if (tls_load_certs(t, "tls_cert_file", o->cert_file, true) != 0)
		return -1;
	return tls_use_key(t, o->key_file);
}

/* The connection: the pair, the name to check, SNI. name is checked as an IP address when the
   connection reads it as one (url_host_address: 127.1 is 127.0.0.1), and then never sent. */
static int tls_session(struct tls_conn *t, enum opt_tls_verify verify, const char *name)
{
	X509_VERIFY_PARAM *param;
	BIO *inner = NULL;
	char addr[URL_ADDRESS_MAX], shown[64];
	bool ip = url_host_address(name, addr, sizeof(addr));

	t->ssl = t->fn.SSL_new(t->ctx);
	if (t->ssl == NULL ||
	    t->fn.BIO_new_bio_pair(&inner, TLS_PAIR_BUF, &t->net, TLS_PAIR_BUF) != 1) {
		tls_why(t, "cannot set up TLS: %s", tls_ssl_reason(t, "out of memory"));
		return -1;
	}
	t->fn.SSL_set_bio(t->ssl, inner, inner);
	param = t->fn.SSL_get0_param(t->ssl);
	if (verify == OPT_TLS_VERIFY_NAME) {
		/* As browsers do: a name is in subjectAltName or nowhere, never the CN. */
		t->fn.X509_VERIFY_PARAM_set_hostflags(param,
						      X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS |
							  X509_CHECK_FLAG_NEVER_CHECK_SUBJECT);
		if ((ip ? t->fn.X509_VERIFY_PARAM_set1_ip_asc(param, addr)
			: t->fn.X509_VERIFY_PARAM_set1_host(param, name, 0)) != 1) {
			tls_why(t, "cannot check the name \"%s\": %s",
				tls_shown(ip ? addr : name, shown, sizeof(shown)),
				tls_ssl_reason(t, "failed"));
			return -1;
		}
	}
	/* RFC 6066: SNI carries DNS names, never addresses. */
	if (!ip && t->fn.SSL_ctrl(t->ssl, SSL_CTRL_SET_TLSEXT_HOSTNAME, TLSEXT_NAMETYPE_host_name,
				  (void *)(uintptr_t)name) != 1) {
		tls_why(t, "cannot send the name \"%s\": %s", tls_shown(name, shown, sizeof(shown)),
			tls_ssl_reason(t, "failed"));
		return -1;
	}
	return 0;
}

/* A failed handshake's cause, the most telling first. */
static void tls_handshake_failed(struct tls_conn *t)
{
	long v = t->fn.SSL_get_verify_result(t->ssl);

	if (t->received > 0 && (t->first < 0x14 || t->first > 0x17)) {
		tls_why(t, "the server answered in plaintext, not TLS (a port without TLS?)");
	} else if (v != X509_V_OK) {
		tls_why(t, "certificate verify failed: %s", t->fn.X509_verify_cert_error_string(v));
	} else if (t->timed_out && t->received == 0) {
		tls_why(t,
			"timed out: no answer to the TLS hello (a port without TLS, waiting for a "
			"line? a stalled server?)");
	} else if (t->closed && t->received == 0) {
		tls_why(t, "the server closed the connection without a word (not TLS?)");
	} else if (t->closed) {
		tls_why(t, "the server closed the connection");
	}
	t->fn.ERR_clear_error();
}

static int tls_handshake(struct tls_conn *t)
{
	int done;

	do {
		t->fn.ERR_clear_error();
		done = tls_step(t, t->fn.SSL_connect(t->ssl));
	} while (done == 0);
	if (done < 0)
		tls_handshake_failed(t);
	return done > 0 ? 0 : -1;
}

struct tls_conn *tls_open(int fd, const struct opt_tls *o, const char *name, int64_t deadline_us,
			  char *why, size_t whysz)
{
	struct tls_conn *t = calloc(1, sizeof(*t));

	if (t == NULL) {
		snprintf(why, whysz, "out of memory");
		return NULL;
	}
	t->fd = fd;
	t->deadline_us = deadline_us;
	t->why = why;
	t->whysz = whysz;
	if (tls_load(t) != 0 || tls_context(t, o) != 0 || tls_session(t, o->verify, name) != 0 ||
	    tls_handshake(t) != 0) {
		tls_close(t);
		return NULL;
	}
	return t;
}

int tls_write(struct tls_conn *t, const void *buf, size_t len, int64_t deadline_us, char *why,
	      size_t whysz)
{
	int done;

	t->deadline_us = deadline_us;
	t->why = why;
	t->whysz = whysz;
	if (len == 0)
		return 0;
	if (len > INT32_MAX) {
		tls_why(t, "command too long");
		return -1;
	}
	/* SSL_write sends all of len or nothing (no SSL_MODE_ENABLE_PARTIAL_WRITE). */
	do {
		t->fn.ERR_clear_error();
		done = tls_step(t, t->fn.SSL_write(t->ssl, buf, (int)len));
	} while (done == 0);
	return done > 0 ? 0 : -1;
}

ssize_t tls_read(struct tls_conn *t, void *buf, size_t n, int64_t deadline_us, char *why,
		 size_t whysz)
{
	int rc, done;

	t->deadline_us = deadline_us;
	t->why = why;
	t->whysz = whysz;
	for (;;) {
		t->fn.ERR_clear_error();
		rc = t->fn.SSL_read(t->ssl, buf, (int)(n > INT32_MAX ? INT32_MAX : n));
		if (rc > 0)
			return rc;
		done = tls_step(t, rc);
		if (done < 0)
			return -1;
	}
}

void tls_close(struct tls_conn *t)
{
	if (t == NULL)
		return;
	if (t->ssl != NULL)
		t->fn.SSL_free(t->ssl); /* and the pair's inner end */
	if (t->net != NULL)
		t->fn.BIO_free(t->net);
	if (t->ctx != NULL)
		t->fn.SSL_CTX_free(t->ctx);
	if (t->lib != NULL) {
		if (t->fn.ERR_clear_error != NULL)
			t->fn.ERR_clear_error();
		dlclose(t->lib);
	}
	free(t);
}
