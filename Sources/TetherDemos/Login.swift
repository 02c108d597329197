import TetherBinding
import TetherJSON
import TetherState

/// The seeds' sign-in form, per session: every connection gets its own private instance.
/// The password itself never enters the state; only its length does.
public final class Login: ViewModel {
    public static let shortPasswordMessage = "6자리 이상 비밀번호를 입력해주세요."
    public static let minimumPasswordLength = 6

    let email: Observable<String>
    let password = Observable("")
    let errorMessage: Observable<String?>
    let signedIn: Observable<Bool>
    private let signInEnabled: ReadOnlyObservable<Bool>

    public init(context: ViewModelContext) {
        email = context.property("email", "")
        errorMessage = context.property("errorMessage", String?.none)
        signedIn = context.property("signedIn", false)
        context.publish("passwordLength", password.map(\.count).removeDuplicates())
        // The seeds' RxSwift rule, as a binding: enabled exactly when both fields hold text.
        signInEnabled = combineLatest(email, password)
            .map { !$0.isEmpty && !$1.isEmpty }
            .removeDuplicates()
        context.publish("signInEnabled", signInEnabled)
    }

    public static let actions = ActionTable<Login>()
        .on("setEmail", ValueArgs<String>.self) { model, args in
            model.email.value = args.value
            model.errorMessage.value = nil
        }
        .on("setPassword", ValueArgs<String>.self) { model, args in
            model.password.value = args.value
            model.errorMessage.value = nil
        }
        .on("signIn") { model in
            guard model.signInEnabled.value else {
                throw ActionError.invalidArgs("sign-in needs an email and a password")
            }
            if model.password.value.count < minimumPasswordLength {
                model.errorMessage.value = shortPasswordMessage
            } else {
                model.errorMessage.value = nil
                model.signedIn.value = true
            }
        }
        .on("signOut") { model in
            model.signedIn.value = false
            model.email.value = ""
            model.password.value = ""
            model.errorMessage.value = nil
        }
}
