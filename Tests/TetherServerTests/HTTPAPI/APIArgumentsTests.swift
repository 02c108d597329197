import Testing
import TetherJSON
import TetherProtocol
@testable import TetherServer

@Suite("HTTP API: bodies, idempotency headers, resume points")
struct APIArgumentsTests {
    @Test func aBodyIsNoneOrAnObject() throws {
        #expect(try APIArguments.parse([]).get() == nil)
        #expect(try APIArguments.parse(Array(" \n".utf8)).get() == nil)
        #expect(try APIArguments.parse(Array(#"{"by":2}"#.utf8)).get() == ["by": 2])
        #expect(APIArguments.parse(Array("[1]".utf8)).failure?.code == .invalidArgs)
        #expect(APIArguments.parse(Array("{".utf8)).failure?.code == .badMessage)
    }

    @Test(arguments: [
        (nil, nil, APIExchange.Idempotency?.none, nil as ErrorCode?),
        ("order-42.paid", nil, .key("order-42.paid"), nil),
        ("7", "payments", .numbered(client: "payments", seq: 7), nil),
        // Not a positive number: an opaque key under the client's name; a client alone: nothing.
        ("0", "payments", .key("payments 0"), nil),
        ("seven", "payments", .key("payments seven"), nil),
        (nil, "payments", nil, nil),
        ("7", "pay ments", nil, .badMessage),
        ("a b", nil, nil, .badMessage),
        ("", nil, nil, .badMessage),
        (String(repeating: "k", count: 65), nil, nil, .badMessage),
    ] as [(String?, String?, APIExchange.Idempotency?, ErrorCode?)])
    func idempotencyHeaders(_ key: String?, _ client: String?, _ expected: APIExchange.Idempotency?, _ error: ErrorCode?) throws {
        let result = APIArguments.idempotency(key: key, client: client)
        if let error {
            #expect(result.failure?.code == error, "\(String(describing: key)) \(String(describing: client))")
        } else {
            #expect(try result.get() == expected)
        }
    }

    @Test func resumePointsAndQueries() {
        #expect(APIArguments.resumePoint("k3x.12") == ResumePoint(epoch: "k3x", version: 12))
        #expect(APIArguments.resumePoint("a.b.3") == ResumePoint(epoch: "a.b", version: 3))
        #expect(APIArguments.resumePoint("12") == nil && APIArguments.resumePoint(".3") == nil && APIArguments.resumePoint("e.-1") == nil)
        #expect(APIArguments.queryValue("presence", in: "since=x&presence=watch") == "watch")
        #expect(APIArguments.queryValue("presence", in: "presences=watch") == nil)
    }
}

extension Result {
    var failure: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}
