import TetherBinding
import TetherJSON
import TetherState

/// The seeds' sign-in form, per session: every connection gets its own private instance.
/// The password itself never enters the state; only its length does.
///
/// The rule, shown before any press: Sign in is enabled only for an e-mail address (one `@`,
/// text before it, a domain with a dot inside after it, no spaces) and a password of at least 6
/// characters. While a typed field breaks it, `errorMessage` says how (the seeds' Korean message
/// for the password).
public final class Login: ViewModel {
    public static let shortPasswordMessage = "6자리 이상 비밀번호를 입력해주세요."
    public static let minimumPasswordLength = 6
    public static let emailMessage = "Enter an e-mail address such as name@example.com."
    public static let signInRule = "sign-in needs an e-mail address (name@example.com) and a password of at least 6 characters"

    let email: Observable<String>
    let password = Observable("")
    let signedIn: Observable<Bool>
    private let signInEnabled: ReadOnlyObservable<Bool>

    public init(context: ViewModelContext) {
        email = context.property("email", "")
        signedIn = context.property("signedIn", false)
        context.publish("passwordLength", password.map(\.count).removeDuplicates())
        context.publish("errorMessage", combineLatest(email, password).map { Self.problem(email: $0, passwordLength: $1.count) }.removeDuplicates())
        signInEnabled = combineLatest(email, password)
            .map { Self.isEmailAddress($0) && $1.count >= Self.minimumPasswordLength }
            .removeDuplicates()
        context.publish("signInEnabled", signInEnabled)
    }

    public static func isEmailAddress(_ text: String) -> Bool {
        let parts = text.split(separator: "@", omittingEmptySubsequences: false)
        guard parts.count == 2, !parts[0].isEmpty, !text.contains(where: \.isWhitespace) else { return false }
        let labels = parts[1].split(separator: ".", omittingEmptySubsequences: false)
        return labels.count >= 2 && labels.allSatisfy { !$0.isEmpty }
    }

    /// What is wrong with what was typed so far; an empty field is not wrong yet.
    public static func problem(email: String, passwordLength: Int) -> String? {
        if !email.isEmpty && !isEmailAddress(email) { return emailMessage }
        if passwordLength > 0 && passwordLength < minimumPasswordLength { return shortPasswordMessage }
        return nil
    }

    public static let actions = ActionTable<Login>()
        .on("setEmail", ValueArgs<String>.self) { model, args in
            model.email.value = args.value
        }
        .on("setPassword", ValueArgs<String>.self) { model, args in
            model.password.value = args.value
        }
        .on("signIn") { model in
            guard model.signInEnabled.value else { throw ActionError.invalidArgs(signInRule) }
            model.signedIn.value = true
        }
        .on("signOut") { model in
            model.signedIn.value = false
            model.email.value = ""
            model.password.value = ""
        }
}
