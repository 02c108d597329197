import TetherJSON
import TetherTransport

/// Plain HTTP GETs on the WebSocket port: health, metrics and, on a cluster node, the cluster's
/// view from here. On the hub's queue.
struct HTTPRoutes {
    let hub: SessionHub
    let metrics: ServerMetrics
    var cluster: ClusterNode? = nil

    func get(_ path: String) -> HTTPResponse {
        switch path {
        case "/healthz":
            // A cluster node that lost NATS still serves joins but can't take actions.
            if let cluster, !cluster.connection.isConnected { return HTTPResponse(status: 503, text: "not connected to the cluster\n") }
            return HTTPResponse(status: 200, text: "ok")
        case "/metrics":
            metrics.rooms.set(Double(hub.roomCount))
            return HTTPResponse(status: 200, contentType: "text/plain; version=0.0.4; charset=utf-8", body: metrics.render())
        case "/cluster":
            guard let cluster else { return HTTPResponse(status: 404, text: "not a cluster node (start with --nats)\n") }
            return HTTPResponse(status: 200, contentType: "application/json", body: cluster.statusJSON.encoded())
        default: return .notFound
        }
    }
}
