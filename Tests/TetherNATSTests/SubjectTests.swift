import Testing
import TetherJSON
import TetherNATS
import TetherTestSupport

extension NATS {
    @Suite struct SubjectTests {
        @Test func escapedNamesAreSingleTokensAndRoundTrip() {
            let names = ["counter", "todo.list", "a*b", "x>", "with space", "=", "", "Zürich 🚀", "a=41", "..", "tab\there"]
            var rng = SeededGenerator(seed: 11)
            let randomNames = (0..<500).map { _ in JSON.randomString(using: &rng) }
            var tokens: Set<String> = []
            for name in names + randomNames {
                let token = NATSSubject.escape(name)
                #expect(!token.isEmpty)
                #expect(token.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || "-_=".contains($0)) }, "\(token)")
                #expect(NATSSubject.unescape(token) == name)
                tokens.insert(token)
            }
            #expect(tokens.count == Set(names + randomNames).count, "distinct names, distinct tokens")
            #expect(NATSSubject.escape("todo.list") == "todo=2Elist")
            #expect(NATSSubject.unescape("a.b") == nil)
            #expect(NATSSubject.unescape("=2e") == nil)
            #expect(NATSSubject.unescape("=4") == nil)
        }
    }
}
