import Testing
@testable import TetherServer

@Suite("HTTP API: routes from method and path")
struct APIRouteTests {
    @Test(arguments: [
        ("POST", "/rooms/counter/actions/increment", APIRoute.act(room: "counter", action: "increment")),
        ("POST", "/rooms/todo:team a/actions/add", .act(room: "todo:team a", action: "add")),
        // A room name may hold slashes: the API's segments are matched at the end.
        ("POST", "/rooms/todo:a/b/actions/add", .act(room: "todo:a/b", action: "add")),
        ("GET", "/rooms/todo:a/actions/add", .methodNotAllowed(allow: "POST")),
        ("GET", "/rooms/counter", .read(room: "counter")),
        ("GET", "/rooms/todo:a/b", .read(room: "todo:a/b")),
        ("POST", "/rooms/counter", .methodNotAllowed(allow: "GET, HEAD, DELETE")),
        ("GET", "/rooms/vote:x/members", .members(room: "vote:x")),
        ("GET", "/rooms/vote:x/events", .events(room: "vote:x")),
        ("DELETE", "/rooms/vote:x/events", .methodNotAllowed(allow: "GET, HEAD")),
        ("GET", "/rooms/vote:x/history", .history(room: "vote:x")),
        ("GET", "/rooms/vote:x/state", .stateAt(room: "vote:x")),
        ("GET", "/rooms/vote:x/export", .export(room: "vote:x")),
        ("POST", "/rooms/vote:x/export", .methodNotAllowed(allow: "GET, HEAD")),
        ("POST", "/rooms/vote:x/fork", .fork(room: "vote:x")),
        ("GET", "/rooms/vote:x/fork", .methodNotAllowed(allow: "POST")),
        ("GET", "/kinds", .kinds(kind: nil)),
        ("GET", "/kinds/todo", .kinds(kind: "todo")),
        ("POST", "/kinds", .methodNotAllowed(allow: "GET, HEAD")),
        ("GET", "/openapi.json", .openAPI),
        // No action named: the path names a room "x/actions/", which takes no POST.
        ("POST", "/rooms/x/actions/", .methodNotAllowed(allow: "GET, HEAD, DELETE")),
    ] as [(String, String, APIRoute)])
    func theRouteOfEachRequest(_ method: String, _ path: String, _ expected: APIRoute) {
        #expect(APIRoute(method: method, path: path) == expected, "\(method) \(path)")
    }

    /// Room administration, health, files: not the API's.
    @Test(arguments: [("GET", "/rooms"), ("DELETE", "/rooms/counter"), ("GET", "/rooms/"), ("GET", "/healthz"), ("GET", "/"),
                      ("GET", "/kinds/")])
    func otherPathsAreNotTheAPIs(_ method: String, _ path: String) {
        #expect(APIRoute(method: method, path: path) == nil, "\(method) \(path)")
    }
}
