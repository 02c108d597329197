import Foundation
import TetherBinding
import TetherProtocol
import TetherJSON
import TetherState

// Release mode only: `swift run -c release tether-bench [name-filter]`.

final class CounterModel: ViewModel {
    let count: Observable<Int>
    init(context: ViewModelContext) { count = context.property("count", 0) }
    static let actions = ActionTable<CounterModel>().on("increment") { $0.count.value += 1 }
}

final class FieldsModel: ViewModel {
    let fields: ObservableMap<String, JSON>
    init(context: ViewModelContext) { fields = context.map("fields", [String: JSON]()) }
    static let actions = ActionTable<FieldsModel>()
}

struct TodoItem: Codable { var id: String; var title: String; var done: Bool }

func todoList(_ count: Int) -> [TodoItem] {
    (0..<count).map { TodoItem(id: "item-\($0)", title: "Buy \($0) things for the team", done: $0 % 3 == 0) }
}

func todoJSON(_ count: Int) -> JSON {
    .object(["items": .array(todoList(count).map { .object(["id": .string($0.id), "title": .string($0.title), "done": .bool($0.done)]) })])
}

func foundationObject(_ json: JSON) -> Any {
    switch json {
    case .null: return NSNull()
    case .bool(let b): return b
    case .int(let i): return i
    case .double(let d): return d
    case .string(let s): return s
    case .array(let a): return a.map(foundationObject)
    case .object(let o): return o.mapValues(foundationObject)
    }
}

var benchmarks: [Benchmark] = []

// 1. An observable change to an encoded patch frame: the server's per-change work.
do {
    let host = ViewModelKind("counter", scope: .shared, CounterModel.self).instantiate(room: "counter")
    let model = host.model(as: CounterModel.self)!
    var version = 0
    benchmarks.append(Benchmark(name: "change → patch frame (counter, replace /count)") { n in
        var total = 0
        for _ in 0..<n {
            model.count.value += 1
            let operations = host.takeChanges()
            var encoded: [UInt8] = []
            JSONPatch.writeOperations(operations, to: &encoded)
            let frame = ServerMessage.encodePatch(room: "counter", epoch: "k3j9x2", from: version, version: version + 1, encodedOperations: encoded)
            version += 1
            total &+= frame.count
        }
        return total
    })
}
do {
    let host = ViewModelKind("bench", scope: .shared, FieldsModel.self).instantiate(room: "bench")
    let model = host.model(as: FieldsModel.self)!
    var version = 0
    let value: JSON = ["sent": 123_456_789, "payload": .string(String(repeating: "x", count: 64))]
    benchmarks.append(Benchmark(name: "change → patch frame (bench, /fields/KEY, 64 B payload)") { n in
        var total = 0
        for i in 0..<n {
            model.fields["k\(i & 63)"] = value
            var encoded: [UInt8] = []
            JSONPatch.writeOperations(host.takeChanges(), to: &encoded)
            let frame = ServerMessage.encodePatch(room: "bench", epoch: "k3j9x2", from: version, version: version + 1, encodedOperations: encoded)
            version += 1
            total &+= frame.count
        }
        return total
    })
}

// 2. A mirror applying patches as a client does: decode the frame, apply the operations.
do {
    var mirror = todoJSON(1_000)
    let frames = (0..<64).map { i in
        ServerMessage.patch(room: "todo", epoch: "e", from: i, version: i + 1, operations: [.replace(path: JSONPointer(tokens: ["items", String(i * 7), "done"]), value: .bool(i % 2 == 0))]).encoded()
    }
    benchmarks.append(Benchmark(name: "mirror: decode + apply patch (1,000-item todo, replace /items/i/done)") { n in
        var total = 0
        for i in 0..<n {
            guard case .patch(_, _, _, _, let operations) = try! ServerMessage.decode(frames[i & 63]) else { fatalError() }
            try! mirror.apply(operations)
            total &+= operations.count
        }
        return total
    })
    let insertOps: [PatchOperation] = [.add(path: "/items/500", value: ["id": "n", "title": "new", "done": false]), .remove(path: "/items/500")]
    benchmarks.append(Benchmark(name: "mirror: apply add+remove in a 1,000-item list") { n in
        for _ in 0..<n { try! mirror.apply(insertOps) }
        return mirror["items"]?.arrayValue?.count ?? 0
    })
}

// 3. Snapshots of a 10,000-item list, the project's writer against Foundation's encoders.
do {
    let snapshot = todoJSON(10_000)
    benchmarks.append(Benchmark(name: "snapshot 10,000 items: JSONWriter") { n in
        var total = 0
        for i in 0..<n {
            total &+= ServerMessage.snapshot(room: "todo", epoch: "e", version: i, state: snapshot).encoded().count
        }
        return total
    })
    let object = foundationObject(snapshot)
    benchmarks.append(Benchmark(name: "snapshot 10,000 items: Foundation JSONSerialization (sorted keys)") { n in
        var total = 0
        for _ in 0..<n { total &+= try! JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]).count }
        return total
    })
    struct Items: Codable { var items: [TodoItem] }
    let items = Items(items: todoList(10_000))
    let encoder = JSONEncoder()
    encoder.outputFormatting = .sortedKeys
    benchmarks.append(Benchmark(name: "snapshot 10,000 items: Foundation JSONEncoder (Codable)") { n in
        var total = 0
        for _ in 0..<n { total &+= try! encoder.encode(items).count }
        return total
    })
    let bytes = snapshot.encoded()
    benchmarks.append(Benchmark(name: "parse 10,000-item snapshot: JSONParser") { n in
        var total = 0
        for _ in 0..<n { total &+= (try! JSONParser().parse(bytes))["items"]?.arrayValue?.count ?? 0 }
        return total
    })
    let data = Data(bytes)
    benchmarks.append(Benchmark(name: "parse 10,000-item snapshot: Foundation JSONSerialization") { n in
        var total = 0
        for _ in 0..<n { total &+= ((try! JSONSerialization.jsonObject(with: data)) as! [String: Any]).count }
        return total
    })
}

// 4. Decoding what clients send.
do {
    let action = ClientMessage.action(room: "bench", name: "set", args: ["key": "k1", "value": ["sent": 123_456_789]], id: 42).encoded()
    benchmarks.append(Benchmark(name: "decode client action") { n in
        var total = 0
        for _ in 0..<n {
            if case .action(_, _, _, let id, _) = try! ClientMessage.decode(action) { total &+= id }
        }
        return total
    })
}

let filter = CommandLine.arguments.dropFirst().first
print("Tether benchmarks (median of 15 rounds of ~20 ms each; min and max in brackets)")
#if DEBUG
print("warning: this is a debug build; run with `swift run -c release tether-bench`")
#endif
for benchmark in benchmarks where filter.map({ benchmark.name.localizedCaseInsensitiveContains($0) }) ?? true {
    let result = Harness.run(benchmark)
    let name = result.name.padding(toLength: 72, withPad: " ", startingAt: 0)
    print("\(name) \(Harness.format(result.medianNanoseconds))  [\(Harness.format(result.minNanoseconds)) – \(Harness.format(result.maxNanoseconds))]")
}
if Harness.sink == 42 { print("") }
