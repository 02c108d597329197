#ifndef TETHER_CLIBWEBSOCKETS_SHIM_H
#define TETHER_CLIBWEBSOCKETS_SHIM_H

// Swift-facing view of libwebsockets 4.1.
//
// Swift cannot import function-like or computed macros (LWS_PRE, the LWS_SERVER_OPTION_* and
// LLL_* bit masks, which also come in the wrong integer types), so typed copies live here.
// Everything else is used straight from <libwebsockets.h>.

#include <libwebsockets.h>
#include <ev.h>
#include <stdint.h>
#include <stdlib.h>
#include <pthread.h>

/// Headroom lws_write needs in front of every payload (frame header, masking key).
enum { TETHER_LWS_PRE = LWS_PRE };

/// lws_write's "bytes as they are" mode (a macro Swift cannot see): on a WebSocket connection it
/// skips framing and extensions and goes straight to the socket or TLS.
static const enum lws_write_protocol TETHER_LWS_WRITE_RAW = LWS_WRITE_RAW;

// Context / vhost options, typed like `lws_context_creation_info.options`.
static const uint64_t TETHER_OPT_DO_SSL_GLOBAL_INIT = (uint64_t)LWS_SERVER_OPTION_DO_SSL_GLOBAL_INIT;
static const uint64_t TETHER_OPT_EXPLICIT_VHOSTS = (uint64_t)LWS_SERVER_OPTION_EXPLICIT_VHOSTS;
// (No LWS_SERVER_OPTION_VALIDATE_UTF8: the transport validates UTF-8 itself, UTF8Validator.swift.)
static const uint64_t TETHER_OPT_DISABLE_IPV6 = (uint64_t)LWS_SERVER_OPTION_DISABLE_IPV6;
static const uint64_t TETHER_OPT_FAIL_UPON_UNABLE_TO_BIND = (uint64_t)LWS_SERVER_OPTION_FAIL_UPON_UNABLE_TO_BIND;
static const uint64_t TETHER_OPT_LIBEV = (uint64_t)LWS_SERVER_OPTION_LIBEV;

/// A vhost's port for a context that serves sockets it is handed (socket shards) and listens on none.
enum { TETHER_PORT_NO_LISTEN_SERVER = CONTEXT_PORT_NO_LISTEN_SERVER };

/// Hands an accepted socket to `vhost`, to be served as HTTP (and upgraded to a WebSocket), through
/// TLS when `tls` is set; NULL when lws refused it (lws has closed the socket then).
static inline struct lws *tether_adopt_socket(struct lws_vhost *vhost, int fd, int tls) {
    lws_sock_file_fd_type descriptor;
    descriptor.sockfd = fd;
    int type = LWS_ADOPT_SOCKET | LWS_ADOPT_HTTP | (tls ? LWS_ADOPT_ALLOW_SSL : 0);
    return lws_adopt_descriptor_vhost(vhost, (lws_adoption_type)type, descriptor, NULL, NULL);
}

// libev, which lws drives through its event-library plugin: epoll instead of poll(), so a
// service round costs what is ready, not what is connected. (libev's API is macros over
// `struct ev_loop *`; these wrappers give Swift plain functions.)
static inline struct ev_loop *tether_ev_loop_new(void) { return ev_loop_new(EVFLAG_AUTO | EVFLAG_NOSIGMASK); }
static inline int tether_ev_run_once(struct ev_loop *loop) { return ev_run(loop, EVRUN_ONCE); }
static inline void tether_ev_loop_destroy(struct ev_loop *loop) { ev_loop_destroy(loop); }

// lws 4.1's libev plugin arms its one timer with ev_timer_set on a possibly active watcher, which
// libev ignores: a timeout scheduled while a later one is armed (a 10 s handshake timeout behind
// a 20 s ping) would fire late. A heartbeat scheduled every 250 ms through the public scheduler
// keeps the armed deadline at most 250 ms away, so every timeout fires within 250 ms of its time.
// It also counts its beats: the service thread reads `beats` after each round to run its own
// once-a-second work without reading the clock every round.
struct tether_heartbeat {
    lws_sorted_usec_list_t sul;
    struct lws_context *context;
    unsigned long beats;
};
static void tether_heartbeat_beat(lws_sorted_usec_list_t *sul) {
    struct tether_heartbeat *beat = lws_container_of(sul, struct tether_heartbeat, sul);
    beat->beats++;
    lws_sul_schedule(beat->context, 0, &beat->sul, tether_heartbeat_beat, 250 * LWS_US_PER_MS);
}
/// Starts the heartbeat; call on the context's service thread.
static inline struct tether_heartbeat *tether_heartbeat_start(struct lws_context *context) {
    struct tether_heartbeat *beat = (struct tether_heartbeat *)calloc(1, sizeof(struct tether_heartbeat));
    if (!beat) return 0;
    beat->context = context;
    lws_sul_schedule(context, 0, &beat->sul, tether_heartbeat_beat, 250 * LWS_US_PER_MS);
    return beat;
}
/// Stops and frees it; call on the service thread before destroying the context.
static inline void tether_heartbeat_stop(struct tether_heartbeat *beat) {
    if (!beat) return;
    lws_sul_cancel(&beat->sul);
    free(beat);
}

// Client connection TLS flags, typed like `lws_client_connect_info.ssl_connection`.
static const int32_t TETHER_LCCSCF_USE_SSL = (int32_t)LCCSCF_USE_SSL;
static const int32_t TETHER_LCCSCF_ALLOW_SELFSIGNED = (int32_t)LCCSCF_ALLOW_SELFSIGNED;
static const int32_t TETHER_LCCSCF_SKIP_HOSTNAME_CHECK = (int32_t)LCCSCF_SKIP_SERVER_CERT_HOSTNAME_CHECK;
static const int32_t TETHER_LCCSCF_ALLOW_EXPIRED = (int32_t)LCCSCF_ALLOW_EXPIRED;
static const int32_t TETHER_LCCSCF_ALLOW_INSECURE = (int32_t)LCCSCF_ALLOW_INSECURE;

// Log levels, typed like lws_set_log_level's first argument.
static const int32_t TETHER_LLL_ERR = LLL_ERR;
static const int32_t TETHER_LLL_WARN = LLL_WARN;
static const int32_t TETHER_LLL_NOTICE = LLL_NOTICE;
static const int32_t TETHER_LLL_INFO = LLL_INFO;


// TLS certificates for a running server (OpenSSL, which lws 4.1 is built on here). Reads a PEM
// certificate chain and private key, checks that the key belongs to the certificate, and, when
// `ctx` is given, installs all three on it in one call: handshakes that start afterwards use
// them, established connections keep theirs (OpenSSL copies the certificate into each SSL at
// accept). Nothing changes on failure. Returns 0, or -1 with one line in `error`.
#include <openssl/pem.h>
#include <openssl/err.h>
#include <openssl/x509.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
static inline void tether_tls_reason(char *error, size_t length, const char *what, const char *path) {
    unsigned long code = ERR_peek_last_error();
    char detail[200] = "";
    if (code) ERR_error_string_n(code, detail, sizeof detail);
    ERR_clear_error();
    snprintf(error, length, "%s %s%s%s", what, path, code ? ": " : "", detail);
}
static inline int tether_tls_load(SSL_CTX *ctx, const char *cert_path, const char *key_path, char *error, size_t length) {
    int result = -1;
    X509 *leaf = NULL;
    EVP_PKEY *key = NULL;
    STACK_OF(X509) *chain = sk_X509_new_null();
    ERR_clear_error();
    if (access(cert_path, R_OK) != 0) { snprintf(error, length, "cannot read certificate file %s: %s", cert_path, strerror(errno)); goto done; }
    if (access(key_path, R_OK) != 0) { snprintf(error, length, "cannot read private key file %s: %s", key_path, strerror(errno)); goto done; }
    BIO *bio = BIO_new_file(cert_path, "r");
    if (!bio) { tether_tls_reason(error, length, "cannot read certificate file", cert_path); goto done; }
    leaf = PEM_read_bio_X509_AUX(bio, NULL, NULL, NULL);
    if (!leaf) { BIO_free(bio); tether_tls_reason(error, length, "no PEM certificate in", cert_path); goto done; }
    X509 *extra;
    while ((extra = PEM_read_bio_X509(bio, NULL, NULL, NULL)) != NULL) sk_X509_push(chain, extra);
    ERR_clear_error();  /* the end of the file */
    BIO_free(bio);
    bio = BIO_new_file(key_path, "r");
    if (!bio) { tether_tls_reason(error, length, "cannot read private key file", key_path); goto done; }
    key = PEM_read_bio_PrivateKey(bio, NULL, NULL, NULL);
    BIO_free(bio);
    if (!key) { tether_tls_reason(error, length, "no PEM private key in", key_path); goto done; }
    if (X509_check_private_key(leaf, key) != 1) {
        ERR_clear_error();
        snprintf(error, length, "the private key %s does not belong to the certificate %s", key_path, cert_path);
        goto done;
    }
    if (ctx && SSL_CTX_use_cert_and_key(ctx, leaf, key, chain, 1) != 1) {
        tether_tls_reason(error, length, "OpenSSL refused the certificate", cert_path);
        goto done;
    }
    result = 0;
done:
    X509_free(leaf);
    EVP_PKEY_free(key);
    sk_X509_pop_free(chain, X509_free);
    return result;
}
/// The serial number of the certificate `ctx` serves, in hex (for logs); "" if none.
static inline void tether_tls_serial(SSL_CTX *ctx, char *out, size_t length) {
    out[0] = 0;
    X509 *cert = ctx ? SSL_CTX_get0_certificate(ctx) : NULL;
    if (!cert) return;
    BIGNUM *number = ASN1_INTEGER_to_BN(X509_get0_serialNumber(cert), NULL);
    char *hex = number ? BN_bn2hex(number) : NULL;
    if (hex) snprintf(out, length, "%s", hex);
    OPENSSL_free(hex);
    BN_free(number);
}

// zlib for permessage-deflate (RFC 7692): raw deflate streams (no zlib header), 32 KiB window.
// deflateInit2/inflateInit2 are macros Swift cannot call.
#include <zlib.h>
static inline int tether_deflate_init(z_stream *stream, int level) {
    return deflateInit2(stream, level, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY);
}
static inline int tether_inflate_init(z_stream *stream) {
    return inflateInit2(stream, -15);
}

// Names the calling thread (visible in top/gdb). Declared here because glibc only exposes it
// under _GNU_SOURCE.
extern int pthread_setname_np(pthread_t thread, const char *name);
static inline void tether_set_thread_name(const char *name) {
    (void)pthread_setname_np(pthread_self(), name);
}

#endif
