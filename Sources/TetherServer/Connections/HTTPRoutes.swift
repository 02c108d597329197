import TetherTransport

/// Plain HTTP GETs on the WebSocket port: health and metrics. On the hub's queue.
struct HTTPRoutes {
    let hub: SessionHub
    let metrics: ServerMetrics

    func get(_ path: String) -> HTTPResponse {
        switch path {
        case "/healthz": return HTTPResponse(status: 200, text: "ok")
        case "/metrics":
            metrics.rooms.set(Double(hub.roomCount))
            return HTTPResponse(status: 200, contentType: "text/plain; version=0.0.4; charset=utf-8", body: metrics.render())
        default: return .notFound
        }
    }
}
