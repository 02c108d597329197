#ifndef TETHER_CLIBWEBSOCKETS_SHIM_H
#define TETHER_CLIBWEBSOCKETS_SHIM_H

// Swift-facing view of libwebsockets 4.1.
//
// Swift cannot import function-like or computed macros (LWS_PRE, the LWS_SERVER_OPTION_* and
// LLL_* bit masks, which also come in the wrong integer types), so typed copies live here.
// Everything else is used straight from <libwebsockets.h>.

#include <libwebsockets.h>
#include <stdint.h>
#include <pthread.h>

/// Headroom lws_write needs in front of every payload (frame header, masking key).
enum { TETHER_LWS_PRE = LWS_PRE };

// Context / vhost options, typed like `lws_context_creation_info.options`.
static const uint64_t TETHER_OPT_DO_SSL_GLOBAL_INIT = (uint64_t)LWS_SERVER_OPTION_DO_SSL_GLOBAL_INIT;
static const uint64_t TETHER_OPT_EXPLICIT_VHOSTS = (uint64_t)LWS_SERVER_OPTION_EXPLICIT_VHOSTS;
static const uint64_t TETHER_OPT_VALIDATE_UTF8 = (uint64_t)LWS_SERVER_OPTION_VALIDATE_UTF8;
static const uint64_t TETHER_OPT_DISABLE_IPV6 = (uint64_t)LWS_SERVER_OPTION_DISABLE_IPV6;
static const uint64_t TETHER_OPT_FAIL_UPON_UNABLE_TO_BIND = (uint64_t)LWS_SERVER_OPTION_FAIL_UPON_UNABLE_TO_BIND;

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


// Names the calling thread (visible in top/gdb). Declared here because glibc only exposes it
// under _GNU_SOURCE.
extern int pthread_setname_np(pthread_t thread, const char *name);
static inline void tether_set_thread_name(const char *name) {
    (void)pthread_setname_np(pthread_self(), name);
}

#endif
