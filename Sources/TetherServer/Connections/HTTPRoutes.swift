import TetherJSON
import TetherTransport

/// Plain HTTP GETs on the WebSocket port: health, metrics, the browser files (the dashboard,
/// `tether.js`, the examples) and, on a cluster node, the cluster's view from here. On the hub's
/// queue.
struct HTTPRoutes {
    let hub: SessionHub
    let metrics: ServerMetrics
    var cluster: ClusterNode? = nil

    func get(_ path: String) -> HTTPResponse {
        var response: HTTPResponse
        switch path {
        case "/healthz":
            // A cluster node that lost NATS still serves joins but can't take actions.
            if let cluster, !cluster.connection.isConnected {
                response = HTTPResponse(status: 503, text: "not connected to the cluster\n")
            } else {
                response = HTTPResponse(status: 200, text: "ok")
            }
        case "/metrics":
            metrics.rooms.set(Double(hub.roomCount))
            response = HTTPResponse(status: 200, contentType: "text/plain; version=0.0.4; charset=utf-8", body: metrics.render())
        case "/cluster":
            if let cluster {
                response = HTTPResponse(status: 200, contentType: "application/json", body: cluster.statusJSON.encoded())
            } else {
                response = HTTPResponse(status: 404, text: "not a cluster node (start with --nats)\n")
            }
        default: response = WebAssets.response(for: path) ?? .notFound
        }
        response.headers["X-Content-Type-Options"] = "nosniff"
        return response
    }
}
