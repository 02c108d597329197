import Testing

/// One test per mistake `@Contract` reports: the error lands on the offending line and nothing
/// is generated, so the compiler adds no errors of its own from the expansion.
@Suite("@Contract's diagnostics")
struct ContractDiagnosticTests {
    /// `source` (its first line the attribute) expands to itself without the attribute, and
    /// `message` is reported at `line`:`column`.
    func expectError(_ source: String, _ message: String, line: Int, column: Int,
                     sourceLocation: SourceLocation = #_sourceLocation) {
        let expanded = source.split(separator: "\n", omittingEmptySubsequences: false).dropFirst().joined(separator: "\n")
        expectExpansion(source, expanded, diagnostics: [error(message, line: line, column: column)], sourceLocation: sourceLocation)
    }

    static let state = """
            struct State: Codable, Sendable, Equatable {
                var count: Int = 0
            }
        """

    @Test func notAnEnum() {
        expectError("""
            @Contract("counter")
            struct Counter {
            }
            """, "@Contract applies to a caseless enum", line: 1, column: 1)
    }

    @Test func anEnumWithCases() {
        expectError("""
            @Contract("counter")
            enum Counter {
                case one
            \(Self.state)
            }
            """, "a contract enum has no cases: it is a namespace", line: 3, column: 5)
    }

    @Test func aKindThatIsNotALiteral() {
        expectError("""
            @Contract(name)
            enum Counter {
            \(Self.state)
            }
            """, "@Contract takes the kind name as a string literal, e.g. @Contract(\"counter\")", line: 1, column: 1)
    }

    @Test func noState() {
        expectError("""
            @Contract("counter")
            enum Counter {
                protocol Actions {
                    func reset()
                }
            }
            """, "a contract declares its published document as a nested 'struct State'", line: 2, column: 6)
    }

    @Test func customCodingKeys() {
        expectError("""
            @Contract("counter")
            enum Counter {
                struct State: Codable, Sendable, Equatable {
                    var count: Int = 0
                    enum CodingKeys: String, CodingKey {
                        case count = "n"
                    }
                }
            }
            """, "a contract's State and Views cannot rename members with CodingKeys: the Swift name is the JSON name",
            line: 5, column: 14)
    }

    @Test func aLetMember() {
        expectError("""
            @Contract("counter")
            enum Counter {
                struct State: Codable, Sendable, Equatable {
                    let count: Int = 0
                }
            }
            """, "State members are stored 'var's: a 'let' with a value is not decoded", line: 4, column: 13)
    }

    @Test func anUntypedMember() {
        expectError("""
            @Contract("counter")
            enum Counter {
                struct State: Codable, Sendable, Equatable {
                    var count = 0
                }
            }
            """, "State member 'count' needs a type annotation (the macro sees syntax, not types)", line: 4, column: 13)
    }

    @Test func aStateMemberWithoutDefault() {
        expectError("""
            @Contract("counter")
            enum Counter {
                struct State: Codable, Sendable, Equatable {
                    var count: Int
                }
            }
            """, "State member 'count' needs a default value: it is what a client shows before the snapshot", line: 4, column: 13)
    }

    @Test func aViewThatIsNotOptional() {
        expectError("""
            @Contract("counter")
            enum Counter {
            \(Self.state)
                struct Views: Codable, Sendable, Equatable {
                    var mine: Int = 0
                }
            }
            """, "Views member 'mine' must be Optional: nil leaves it out of the viewer's document", line: 7, column: 13)
    }

    @Test func aNameInStateAndViews() {
        expectError("""
            @Contract("counter")
            enum Counter {
            \(Self.state)
                struct Views: Codable, Sendable, Equatable {
                    var count: Int?
                }
            }
            """, "'count' is both a State and a Views member: a document has one member of each name", line: 2, column: 6)
    }

    @Test func aPropertyInActions() {
        expectError("""
            @Contract("counter")
            enum Counter {
            \(Self.state)
                protocol Actions {
                    var busy: Bool { get }
                }
            }
            """, "protocol Actions holds only action methods", line: 7, column: 9)
    }

    @Test func anActionNamedLikeAGeneratedMember() {
        expectError("""
            @Contract("counter")
            enum Counter {
            \(Self.state)
                protocol Actions {
                    func binding()
                }
            }
            """, "action 'binding' has the name of a member @Contract writes; rename it", line: 7, column: 14)
    }

    @Test(arguments: [
        ("reset", "func reset() async", "is async: actions run synchronously on the room", 9),
        ("total", "func total() -> Int", "returns a value: an action's result is the patch it produces", 22),
        ("add", "func add(_ n: Int)", "has an unlabelled parameter: the label is the JSON key", 18),
        ("add", "func add(n: Int...)", "has a variadic parameter: pass an array", 18),
        ("add", "func add(n: inout Int)", "has an inout or attributed parameter", 18),
        ("add", "func add<T: Codable>(n: T)", "is generic: arguments have one JSON type", 9),
        ("add", "static func add(n: Int)", "is static: actions are instance methods of the ViewModel", 9),
        ("vote", "func vote(viewer: Viewer, option: String)", "takes its Viewer before other parameters: the Viewer comes last", 19),
    ])
    func anUnsupportedAction(name: String, signature: String, why: String, column: Int) {
        expectError("""
            @Contract("counter")
            enum Counter {
            \(Self.state)
                protocol Actions {
                    \(signature)
                }
            }
            """, "action '\(name)' \(why)", line: 7, column: column)
    }
}
