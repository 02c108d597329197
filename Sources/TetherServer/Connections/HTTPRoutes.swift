import TetherTransport

/// Plain HTTP GETs on the WebSocket port: health, metrics, and the browser files (the dashboard,
/// `tether.js`, the examples). On the hub's queue.
struct HTTPRoutes {
    let hub: SessionHub
    let metrics: ServerMetrics

    func get(_ path: String) -> HTTPResponse {
        var response: HTTPResponse
        switch path {
        case "/healthz": response = HTTPResponse(status: 200, text: "ok")
        case "/metrics":
            metrics.rooms.set(Double(hub.roomCount))
            response = HTTPResponse(status: 200, contentType: "text/plain; version=0.0.4; charset=utf-8", body: metrics.render())
        default: response = WebAssets.response(for: path) ?? .notFound
        }
        response.headers["X-Content-Type-Options"] = "nosniff"
        return response
    }
}
