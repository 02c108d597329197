import TetherBinding
import TetherJSON
import TetherState

/// The gallery: "next" and "previous" cycle through three people; name and picture follow the
/// index.
public final class Gallery: ViewModel {
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

    let index: Observable<Int>

    public init(context: ViewModelContext) {
        index = context.property("index", 0)
        context.publish("count", Observable(Gallery.people.count))
        context.publish("name", index.map { Gallery.person(at: $0).name })
        context.publish("picture", index.map { Gallery.person(at: $0).picture })
    }

    static func person(at index: Int) -> Person {
        people[((index % people.count) + people.count) % people.count]
    }

    public static let actions = ActionTable<Gallery>()
        .on("next") { model in model.index.value = (model.index.value + 1) % people.count }
        .on("previous") { model in model.index.value = (model.index.value + people.count - 1) % people.count }
}
