import TetherBinding
import TetherContract
import TetherDemoContracts
import TetherState

/// `GalleryContract`'s ViewModel: "next" and "previous" cycle through three people; name and
/// picture follow the index.
public final class Gallery: ViewModel, GalleryContract.Implementation {
    struct Person {
        let name: String
        let picture: String
    }

    static let people = [
        Person(name: "Ada Lovelace", picture: """
              .-~~~-.
             /  ^ ^  \\
            |  (o o)  |
             \\   ~   /
              '-._.-'
            """),
        Person(name: "Alan Turing", picture: """
              _______
             |  ___  |
             | (o o) |
             |   ^   |
             |  '-'  |
              '-----'
            """),
        Person(name: "Grace Hopper", picture: """
               /\\_/\\
              ( o.o )
               > ^ <
              /|   |\\
             (_|   |_)
            """),
    ]

    public let index = Observable(0)
    public let count = ReadOnlyObservable.constant(Gallery.people.count)
    public let name: ReadOnlyObservable<String>
    public let picture: ReadOnlyObservable<String>

    public init(context: ViewModelContext) {
        name = index.map { Gallery.person(at: $0).name }
        picture = index.map { Gallery.person(at: $0).picture }
    }

    static func person(at index: Int) -> Person {
        people[((index % people.count) + people.count) % people.count]
    }

    public static let actions = ActionTable(GalleryContract.binding(Gallery.self))

    public func next() { index.value = (index.value + 1) % Self.people.count }

    public func previous() { index.value = (index.value + Self.people.count - 1) % Self.people.count }
}
