import TetherProtocol
import TetherJSON

/// libFuzzer entry: feeds each input to the client-message decoder and, as a patch document, to
/// JSON Patch apply on a fixed document. Nothing may trap; a patch that applies must apply the
/// same way twice, and a failed one must leave the document unchanged.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = UnsafeRawBufferPointer(start: data, count: size)
    _ = try? ClientMessage.decode(bytes)
    _ = try? ServerMessage.decode(bytes)

    guard let json = try? JSONParser().parse(bytes) else { return 0 }
    // Whatever parses must write and parse back to the same value.
    let written = json.encoded()
    guard (try? JSONParser().parse(written)) == json else { fatalError("write/parse round trip changed \(json)") }

    guard let operations = try? JSONPatch.decode(json) else { return 0 }
    let original: JSON = ["a": [1, 2, ["b": "c"]], "d": ["e": nil, "f": [true, 1.5]], "": "empty", "~/": 0]
    var document = original
    do {
        try document.apply(operations)
        var again = original
        try again.apply(operations)
        guard again == document else { fatalError("apply is not deterministic") }
    } catch {
        guard document == original else { fatalError("a failed patch changed the document") }
    }
    return 0
}
