// packed-broadcaster: the packed-write limit, measured with tether-load beside tetherd.
//
// A plain libwebsockets broadcaster, no Tether server code: one thread, lws on a libev loop
// (epoll, as tetherd), and the one thing being measured, a connection's queued frames packed
// into ONE write per flush. Frames are built with their WebSocket headers into the connection's
// own buffer, and after each round of the event loop every connection with something queued gets
// one lws_write(LWS_WRITE_RAW) (one send(), or one SSL_write over TLS) for all of it.
//
// It speaks just enough of Tether's wire format for tether-load to drive and check it: hello on
// open; `join` gets an empty snapshot; an `action` `set` becomes one patch (the value copied
// verbatim, no JSON tree) sent to the room's subscribers, and an ack to the sender. No rooms
// beyond a name, no state, no history, no merging, no resume: run it for fan-out and saturation
// (fresh process, subscribers join before publishers start), not for churn.
//
//   packed-broadcaster [--port N] [--tls-cert FILE --tls-key FILE]
// prints "packed-broadcaster listening on ws://127.0.0.1:PORT" once it listens.
#define _GNU_SOURCE  // memmem
#include <libwebsockets.h>
#include <ev.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_ROOMS 4096

struct buffer {
    unsigned char *bytes;
    size_t length, capacity;
};

struct client {
    struct lws *wsi;
    struct buffer queue;       // framed bytes not yet written
    int dirty;                 // in the dirty list
    int room;                  // joined room, -1 for none
    struct client *next_in_room, *prev_in_room;
    struct buffer rx;          // a message arriving in several pieces
};

struct room {
    char *name;
    long version;
    struct client *subscribers;
};

static struct room rooms[MAX_ROOMS];
static int room_count;
static struct client **dirty;
static size_t dirty_count, dirty_capacity;
static struct buffer payload;  // one message being built
static volatile sig_atomic_t stopping;

static void reserve(struct buffer *b, size_t more) {
    if (b->length + more <= b->capacity) return;
    size_t capacity = b->capacity ? b->capacity : 1024;
    while (capacity < b->length + more) capacity *= 2;
    b->bytes = realloc(b->bytes, capacity);
    if (!b->bytes) { fprintf(stderr, "out of memory\n"); exit(1); }
    b->capacity = capacity;
}

static void append(struct buffer *b, const void *bytes, size_t length) {
    reserve(b, length);
    memcpy(b->bytes + b->length, bytes, length);
    b->length += length;
}

static void append_text(struct buffer *b, const char *text) { append(b, text, strlen(text)); }

static void append_long(struct buffer *b, long value) {
    char digits[24];
    append(b, digits, (size_t)snprintf(digits, sizeof digits, "%ld", value));
}

// Queues `payload` as one unmasked FIN text frame, header included, on `c`.
static void queue_frame(struct client *c, const unsigned char *bytes, size_t length) {
    unsigned char header[10];
    size_t n = 0;
    header[n++] = 0x81;
    if (length < 126) {
        header[n++] = (unsigned char)length;
    } else if (length < 65536) {
        header[n++] = 126;
        header[n++] = (unsigned char)(length >> 8);
        header[n++] = (unsigned char)length;
    } else {
        header[n++] = 127;
        for (int shift = 56; shift >= 0; shift -= 8) header[n++] = (unsigned char)(length >> shift);
    }
    reserve(&c->queue, n + length);
    memcpy(c->queue.bytes + c->queue.length, header, n);
    memcpy(c->queue.bytes + c->queue.length + n, bytes, length);
    c->queue.length += n + length;
    if (!c->dirty) {
        c->dirty = 1;
        if (dirty_count == dirty_capacity) {
            dirty_capacity = dirty_capacity ? dirty_capacity * 2 : 1024;
            dirty = realloc(dirty, dirty_capacity * sizeof *dirty);
        }
        dirty[dirty_count++] = c;
    }
}

// Writes everything queued on `c` in one lws_write; lws keeps what the socket does not take and
// asks for WRITEABLE, where the rest goes out.
static int write_queue(struct client *c) {
    if (!c->queue.length || lws_partial_buffered(c->wsi)) return 0;
    int written = lws_write(c->wsi, c->queue.bytes, c->queue.length, LWS_WRITE_RAW);
    if (written < (int)c->queue.length) return -1;
    c->queue.length = 0;
    return 0;
}

// After a round of the event loop: one write per connection that got frames during it.
static void flush_dirty(void) {
    for (size_t i = 0; i < dirty_count; i++) {
        struct client *c = dirty[i];
        c->dirty = 0;
        if (!c->wsi) continue;
        if (lws_partial_buffered(c->wsi)) lws_callback_on_writable(c->wsi);
        else if (write_queue(c)) lws_set_timeout(c->wsi, PENDING_TIMEOUT_USER_OK, LWS_TO_KILL_ASYNC);
    }
    dirty_count = 0;
}

// The bytes of a JSON string member's value ("key":"VALUE"), unescaped escapes left as they are.
static int string_member(const char *json, size_t length, const char *key, const char **start, size_t *count) {
    const char *end = json + length;
    const char *p = json;
    size_t keyLength = strlen(key);
    while ((p = memmem(p, (size_t)(end - p), key, keyLength))) {
        p += keyLength;
        while (p < end && (*p == ' ' || *p == ':')) p++;
        if (p >= end || *p != '"') continue;
        const char *s = ++p;
        while (p < end && *p != '"') p += (*p == '\\') ? 2 : 1;
        if (p >= end) return 0;
        *start = s;
        *count = (size_t)(p - s);
        return 1;
    }
    return 0;
}

// The raw JSON value after "key": (an object, string or number), by bracket matching.
static int raw_member(const char *json, size_t length, const char *key, const char **start, size_t *count) {
    const char *end = json + length;
    const char *p = memmem(json, length, key, strlen(key));
    if (!p) return 0;
    p += strlen(key);
    while (p < end && (*p == ' ' || *p == ':')) p++;
    const char *s = p;
    int depth = 0;
    for (; p < end; p++) {
        if (*p == '"') {
            for (p++; p < end && *p != '"'; p += (*p == '\\') ? 2 : 1) {}
            if (depth == 0) { p++; break; }
        } else if (*p == '{' || *p == '[') {
            depth++;
        } else if (*p == '}' || *p == ']') {
            if (depth == 0) break;
            if (--depth == 0) { p++; break; }
        } else if (depth == 0 && *p == ',') {
            break;
        }
    }
    if (p > end) return 0;
    *start = s;
    *count = (size_t)(p - s);
    return *count > 0;
}

static int room_named(const char *name, size_t length) {
    for (int i = 0; i < room_count; i++)
        if (strlen(rooms[i].name) == length && !memcmp(rooms[i].name, name, length)) return i;
    if (room_count == MAX_ROOMS) return -1;
    rooms[room_count].name = strndup(name, length);
    rooms[room_count].version = 0;
    rooms[room_count].subscribers = NULL;
    return room_count++;
}

static void leave_room(struct client *c) {
    if (c->room < 0) return;
    struct room *r = &rooms[c->room];
    if (c->prev_in_room) c->prev_in_room->next_in_room = c->next_in_room;
    else r->subscribers = c->next_in_room;
    if (c->next_in_room) c->next_in_room->prev_in_room = c->prev_in_room;
    c->next_in_room = c->prev_in_room = NULL;
    c->room = -1;
}

static void received(struct client *c, const char *json, size_t length) {
    const char *type, *name, *id;
    size_t typeLength, nameLength, idLength;
    if (!string_member(json, length, "\"type\"", &type, &typeLength)) return;
    if (!string_member(json, length, "\"room\"", &name, &nameLength)) return;
    int index = room_named(name, nameLength);
    if (index < 0) return;
    struct room *r = &rooms[index];
    int hasID = raw_member(json, length, "\"id\"", &id, &idLength);
    payload.length = 0;
    if (typeLength == 4 && !memcmp(type, "join", 4)) {
        leave_room(c);
        c->room = index;
        c->next_in_room = r->subscribers;
        if (r->subscribers) r->subscribers->prev_in_room = c;
        r->subscribers = c;
        append_text(&payload, "{\"type\":\"snapshot\",\"room\":\"");
        append(&payload, name, nameLength);
        append_text(&payload, "\",\"epoch\":\"packed\",\"version\":");
        append_long(&payload, r->version);
        append_text(&payload, ",\"state\":{\"fields\":{}}}");
        queue_frame(c, payload.bytes, payload.length);
    } else if (typeLength == 6 && !memcmp(type, "action", 6)) {
        const char *key, *value;
        size_t keyLength, valueLength;
        if (!string_member(json, length, "\"key\"", &key, &keyLength)) return;
        if (!raw_member(json, length, "\"value\"", &value, &valueLength)) return;
        r->version++;
        append_text(&payload, "{\"type\":\"patch\",\"room\":\"");
        append(&payload, name, nameLength);
        append_text(&payload, "\",\"epoch\":\"packed\",\"from\":");
        append_long(&payload, r->version - 1);
        append_text(&payload, ",\"version\":");
        append_long(&payload, r->version);
        append_text(&payload, ",\"ops\":[{\"op\":\"replace\",\"path\":\"/fields/");
        append(&payload, key, keyLength);
        append_text(&payload, "\",\"value\":");
        append(&payload, value, valueLength);
        append_text(&payload, "}]}");
        for (struct client *s = r->subscribers; s; s = s->next_in_room) queue_frame(s, payload.bytes, payload.length);
    } else {
        return;
    }
    if (hasID) {
        payload.length = 0;
        append_text(&payload, "{\"type\":\"ack\",\"id\":");
        append(&payload, id, idLength);
        append_text(&payload, ",\"room\":\"");
        append(&payload, name, nameLength);
        append_text(&payload, "\",\"version\":");
        append_long(&payload, r->version);
        append_text(&payload, "}");
        queue_frame(c, payload.bytes, payload.length);
    }
}

// GET /healthz answers "ok" (tether-load checks it before connecting); anything else 404.
static int serve_http(struct lws *wsi, const char *path) {
    unsigned char buffer[LWS_PRE + 512];
    unsigned char *start = buffer + LWS_PRE, *p = start, *end = buffer + sizeof buffer;
    int ok = !strcmp(path, "/healthz");
    static unsigned char body[LWS_PRE + 16];
    const char *text = ok ? "ok\n" : "not found\n";
    size_t length = strlen(text);
    if (lws_add_http_common_headers(wsi, ok ? 200 : 404, "text/plain", length, &p, end)) return -1;
    if (lws_finalize_write_http_header(wsi, start, &p, end)) return -1;
    memcpy(body + LWS_PRE, text, length);
    if (lws_write(wsi, body + LWS_PRE, length, LWS_WRITE_HTTP_FINAL) != (int)length) return -1;
    return lws_http_transaction_completed(wsi) ? -1 : 0;
}

static int callback(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in, size_t len) {
    struct client *c = user;
    switch (reason) {
    case LWS_CALLBACK_ESTABLISHED:
        memset(c, 0, sizeof *c);
        c->wsi = wsi;
        c->room = -1;
        {
            static const char hello[] = "{\"type\":\"hello\",\"protocol\":1,\"server\":\"packed-broadcaster\",\"session\":\"s\"}";
            queue_frame(c, (const unsigned char *)hello, sizeof hello - 1);
        }
        return 0;
    case LWS_CALLBACK_RECEIVE:
        if (!c->rx.length && lws_is_final_fragment(wsi)) {
            received(c, in, len);
        } else {
            append(&c->rx, in, len);
            if (lws_is_final_fragment(wsi)) {
                received(c, (const char *)c->rx.bytes, c->rx.length);
                c->rx.length = 0;
            }
        }
        return 0;
    case LWS_CALLBACK_SERVER_WRITEABLE:
        return write_queue(c);
    case LWS_CALLBACK_HTTP:
        return serve_http(wsi, in ? (const char *)in : "/");
    case LWS_CALLBACK_CLOSED:
        if (c->wsi != wsi) return 0;
        leave_room(c);
        for (size_t i = 0; i < dirty_count; i++) if (dirty[i] == c) dirty[i] = dirty[--dirty_count];
        c->wsi = NULL;
        free(c->queue.bytes);
        free(c->rx.bytes);
        memset(&c->queue, 0, sizeof c->queue);
        memset(&c->rx, 0, sizeof c->rx);
        return 0;
    default:
        return lws_callback_http_dummy(wsi, reason, user, in, len);
    }
}

static void on_signal(int signal) { (void)signal; stopping = 1; }

int main(int argc, char **argv) {
    int port = 0;
    const char *cert = NULL, *key = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--port") && i + 1 < argc) port = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--tls-cert") && i + 1 < argc) cert = argv[++i];
        else if (!strcmp(argv[i], "--tls-key") && i + 1 < argc) key = argv[++i];
        else { fprintf(stderr, "usage: packed-broadcaster [--port N] [--tls-cert FILE --tls-key FILE]\n"); return 64; }
    }
    lws_set_log_level(LLL_ERR, NULL);
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    signal(SIGPIPE, SIG_IGN);

    static struct lws_protocols protocols[] = {
        { "tether.v1", callback, sizeof(struct client), 4096, 0, NULL, 0 },
        { NULL, NULL, 0, 0, 0, NULL, 0 },
    };
    // lws sends at most tx_packet_size bytes per write (the rest waits for WRITEABLE): lift it.
    protocols[0].tx_packet_size = 1 << 20;

    struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO | EVFLAG_NOSIGMASK);
    void *foreign[] = { loop };
    struct lws_context_creation_info info;
    memset(&info, 0, sizeof info);
    info.port = port;
    info.iface = "127.0.0.1";
    info.protocols = protocols;
    info.options = LWS_SERVER_OPTION_LIBEV | LWS_SERVER_OPTION_DISABLE_IPV6 | LWS_SERVER_OPTION_FAIL_UPON_UNABLE_TO_BIND;
    info.foreign_loops = foreign;
    info.count_threads = 1;
    if (cert && key) {
        info.options |= LWS_SERVER_OPTION_DO_SSL_GLOBAL_INIT;
        info.ssl_cert_filepath = cert;
        info.ssl_private_key_filepath = key;
    }
    struct lws_context *context = lws_create_context(&info);
    if (!context) { fprintf(stderr, "packed-broadcaster: cannot start (port in use?)\n"); return 1; }
    struct lws_vhost *vhost = lws_get_vhost_by_name(context, "default");
    printf("packed-broadcaster listening on %s://127.0.0.1:%d\n", cert ? "wss" : "ws",
           vhost ? lws_get_vhost_listen_port(vhost) : port);
    fflush(stdout);
    while (!stopping) {
        ev_run(loop, EVRUN_ONCE);
        flush_dirty();
    }
    lws_context_destroy(context);
    ev_loop_destroy(loop);
    return 0;
}
