"""The words the layers look for, in several languages, and the words that say "not a secret".

Every word is lower-case. A STRONG word names a secret outright (password,
passphrase, secret, credentials): whatever value follows it is hidden, unless
the value is a reference (`${DB_PASSWORD}`), a type or a placeholder. A WEAK
word (key, token, auth, clé, chiave, ...) also names ordinary things ("the key
point", "token: expired"): its value is hidden only when it looks like a
credential (digits or symbols mixed with letters, or random).
"""

from __future__ import annotations

# "password" in Cyrillic, Greek, Hebrew, Arabic, Hindi, Chinese, Japanese, Korean, Vietnamese, Indonesian, Thai
NON_LATIN_PASSWORD_WORDS = (
    "пароль",
    "гасло",
    "κωδικός",
    "סיסמה",
    "סיסמא",
    "كلمة المرور",
    "كلمة السر",
    "पासवर्ड",
    "密码",
    "密碼",
    "口令",
    "パスワード",
    "暗証番号",
    "비밀번호",
    "암호",
    "mật khẩu",
    "mat khau",
    "kata sandi",
    "kata laluan",
    "รหัสผ่าน",
)

STRONG_WORDS = (
    # English
    "password",
    "passwd",
    "passphrase",
    "passcode",
    "pwd",
    "pw",
    "secret",
    "credential",
    "credentials",
    "creds",
    "apikey",
    "privatekey",
    "dsn",
    "connectionstring",
    "connstr",
    "conn_str",
    "mnemonic",
    "seed phrase",
    "recovery phrase",
    "recovery code",
    "recovery codes",
    "backup code",
    "backup codes",
    "identified by",
    # German, Dutch, Scandinavian, Finnish, Polish, Czech, Hungarian, Turkish, Romanian
    "passwort",
    "kennwort",
    "zugangsdaten",
    "geheimnis",
    "wachtwoord",
    "lösenord",
    "losenord",
    "adgangskode",
    "kodeord",
    "passord",
    "salasana",
    "hasło",
    "haslo",
    "heslo",
    "jelszó",
    "jelszo",
    "şifre",
    "sifre",
    "parolă",
    # French, Spanish, Portuguese, Italian
    "mot de passe",
    "mdp",
    "identifiants",
    "contraseña",
    "contrasena",
    "contrasenya",
    "credenciales",
    "senha",
    "palavra-passe",
    "credenciais",
    "parola d'ordine",
    "credenziali",
    *NON_LATIN_PASSWORD_WORDS,
    # "secret" and "secret key" in Russian, Chinese and Japanese
    "секрет",
    "密钥",
    "密鑰",
    "秘钥",
    "秘密鍵",
)

WEAK_WORDS = (
    "token",
    "key",
    "auth",
    "pass",
    "pin",
    "security code",
    "verification code",
    "one-time code",
    "one time code",
    "2fa code",
    "sms code",
    "login code",
    "otp code",
    "mfa code",
    "cvv",
    "cvc",
    "otp",
    "totp",
    "signature",
    "cookie",
    "bearer",
    "authorization",
    "sas",
    "hmac",
    "salt",
    "seed",
    "pat",
    "login",
    # translations of "key" and "token"
    "schlüssel",
    "schluessel",
    "sleutel",
    "geheim",
    "clé",
    "clef",
    "jeton",
    "clave",
    "secreto",
    "secreta",
    "secrète",
    "chave",
    "segredo",
    "chiave",
    "segreto",
    "segreta",
    "klucz",
    "klíč",
    "kulcs",
    "nyckel",
    "nøgle",
    "nøkkel",
    "avain",
    "anahtar",
    "parola",
    "cheie",
    "ключ",
    "токен",
    "令牌",
    "トークン",
    "토큰",
    "sandi",
)

# Commands whose flags carry passwords (-pPASS, -p PASS, -a PASS, -w PASS, -U user%pass, -u user:pass), and
# flags that do on any command (-u/-a/--auth user:pass, Windows' /p:PASS).
CLI_COMMANDS = (
    "mysql",
    "mysqldump",
    "mysqladmin",
    "mariadb",
    "mariadb-dump",
    "sshpass",
    "curl",
    "wget",
    "redis-cli",
    "ldapsearch",
    "ldapadd",
    "ldapmodify",
    "ldapdelete",
    "ldapwhoami",
    "smbclient",
    "sqlcmd",
    "7z",
    "7za",
    "zip",
    "unzip",
    "rar",
    "unrar",
    "openssl",
    "mongo",
    "mongosh",
    "mongodump",
    "mongorestore",
    "mongoexport",
    "mongoimport",
    "htpasswd",
    "ssh-keygen",
    "docker",
    "podman",
    "nerdctl",
    "helm",
    "skopeo",
    "buildah",
    "oras",
    "sqlplus",
    "influx",
    "rabbitmqctl",
    "keytool",
    "snmpwalk",
    "snmpget",
    "snmpbulkwalk",
    "snmpset",
    "net use",
    "net user",
    "az login",
    "convertto-securestring",
    "--user",
    "-u ",
    "--auth ",
    "-a ",
    "/p:",
)

TRIGGER_WORDS = STRONG_WORDS + WEAK_WORDS + CLI_COMMANDS

# Ordinary words that contain a secret-ish word and are frequent in developers' text: the scan matches
# them whole (a longer alternative wins) and drops them, so "passed", "path" or "monkeypatch" cost nothing.
NOISE_WORDS = (
    "passed",
    "passes",
    "passing",
    "passenger",
    "passive",
    "passage",
    "bypass",
    "compass",
    "monkeypatch",
    "path",
    "paths",
    "patch",
    "patched",
    "patches",
    "pattern",
    "patterns",
    "patient",
    "keys",
    "keyboard",
    "keyword",
    "keywords",
    "monkey",
    "tokens",
    "tokenize",
    "tokenizer",
    "author",
    "authors",
    "authored",
    "ping",
    "pinned",
    "opinion",
    "spinner",
)

# A word before the secret word that turns the identifier into something ordinary (max_tokens, primary_key).
NOT_SECRET_BEFORE = frozenset(
    """max min num number total count public primary foreign sort partition cache lookup row
    unique composite natural dict hash_ idempotency map registry index next_page item object
    s3 bucket file ssh_public cursor continuation page foreign_ routing list queue message translation field
    column group
    """.split()
)

# A word after the secret word that names a property of the secret, not the secret (password_reset_url).
NOT_SECRET_AFTER = frozenset(
    """count counts len length limit limits type types name names file filename files path paths
    dir directory env var vars variable field fields label labels prompt hint hints policy policies
    reset resets rotation expiry expires expired expiration ttl lifetime timeout size format formats
    header headers param params prefix suffix pattern regex required enabled disabled provider
    providers store manager source location usage version algorithm alg method mode strategy
    validator validators validation input widget form forms template class model schema table
    column id ids fingerprint public pub publishable ref refs endpoint url uri endpoints urls
    min max strength rules rule changed change update updated created length_ budget budgets
    placeholder help error errors message messages text confirm confirmation_ flow page view
    views handler handlers generator generation service services server servers client_id
    login logins count_ index cache loader lookup lookups spec specs kind kinds list map dict
    set sets length_limit when at date time timestamp age expiry_ status state ok valid check
    checks checked verify verified verification test tests example examples file_path manager_
    usage_ encoding encoder decoder length_ rotate rotated recovery_ holder owner owners
    guidance guide guidelines requirement requirements complexity domain secure samesite httponly
    attempt attempts failed failure failures page screen button link dialog modal missing mismatch
    invalid incorrect required_ reason threshold param create delete get list dictionary cache registry
    """.split()
)

# Values that are never the secret itself: references, types, placeholders, words of state.
NOT_SECRET_VALUES = frozenset(
    """none null nil true false yes no on off undefined required optional empty blank unset
    changeme change_me redacted example sample placeholder xxx xxxx xxxxxx xxxxxxxx todo tbd
    str string int integer bytes bool boolean text varchar char object any dict list secretstr
    password passwd pwd secret token key value values val data self cls this it
    expired invalid incorrect wrong missing correct weak strong short long reset stored saved
    set unknown hidden masked same different new old the a an is was are not required_
    """.split()
)

# Words that start a clause, never a password ("the password is *in* the vault").
STOPWORDS = frozenset(
    """a an the this that these those is are was were be been being to of in on at by for with
    from into onto over under about as and or but not no nor so too very still now then than
    also just only even already yet again here there where when what which who whom whose how
    why it its it's i you he she we they me him her us them my your his our their mine yours
    has have had do does did will would should could can may might must shall same different
    stored saved kept set sent changed reset expired wrong correct incorrect invalid missing
    required optional empty blank unknown secret hidden somewhere written printed shown given
    le la les un une des est et ou der die das ein eine ist und oder el los las es y o
    il lo gli è e o de da do é um uma het een en of
    """.split()
)

# Words that may open the words between a secret word and a ':' or '=' ("password for grafana: v").
PREPOSITIONS = frozenset(
    """for of to on at in from with the my our your his her their this da de del della des du di do dla
    für fuer van voor vom zum zur für pour para per para na no em от для""".split()
)

# Copulas between a secret word and its value in sentences, in several languages.
# Copulas between a secret word and its value in sentences: words (a word boundary before them) ...
WORD_COPULAS = (
    "is set to|was set to|is now|was changed to|changed to|would be|will be|should be|is|was|are|were|equals|"
    "reads|became|becomes|set to|es|era|est|était|ist|war|lautet|è|é|är|er|on|jest|je|to|это|είναι|היא|הוא|"
    "هي|هو|है|adalah|ialah|là|คือ|olarak|dır|dir|on|ir|er"
)
# ... and marks, which need none.
SYMBOL_COPULAS = ":=|->|[:=：—–→是为為は가는은]"

# STRONG words that name a password itself (not credentials in general, nor a secret): what follows them is hidden
# even when it is short or plain words, and they are never glued into an ordinary word.
PASSWORD_WORDS = frozenset(
    (
        # English, and SQL's CREATE USER … IDENTIFIED BY
        "password",
        "passwd",
        "passphrase",
        "passcode",
        "pwd",
        "pw",
        "pass",
        "identified by",
        # German, Dutch, Scandinavian, Finnish, Polish, Czech, Hungarian, Turkish, Romanian
        "passwort",
        "kennwort",
        "wachtwoord",
        "lösenord",
        "losenord",
        "adgangskode",
        "kodeord",
        "passord",
        "salasana",
        "hasło",
        "haslo",
        "heslo",
        "jelszó",
        "jelszo",
        "şifre",
        "sifre",
        "parolă",
        # French, Spanish, Catalan, Portuguese, Italian
        "mot de passe",
        "mdp",
        "contraseña",
        "contrasena",
        "contrasenya",
        "senha",
        "palavra-passe",
        "parola d'ordine",
        *NON_LATIN_PASSWORD_WORDS,
    )
)

# Words that languages glue into compounds (toegangssleutel, Zugangsschlüssel, åtkomstnyckel): a word before them
# does not make them part of an ordinary word. "pass" and "pwd" are left out: bypass, compass.
UNGLUED_WORDS = (PASSWORD_WORDS - {"pass", "pwd"}) | frozenset(
    ("schlüssel", "schluessel", "sleutel", "nyckel", "nøgle", "nøkkel", "avain", "kulcs")
)

# Words whose value is the rest of the line (a seed phrase is words separated by spaces), and the kind it is.
WHOLE_LINE_WORDS = {"mnemonic": "seed_phrase", "seed phrase": "seed_phrase", "recovery phrase": "seed_phrase"}

# Words whose value is a list of one-time recovery codes, hidden to the end of the line.
RECOVERY_CODE_WORDS = frozenset(("recovery code", "recovery codes", "backup code", "backup codes"))

# Words whose value is a short number (a PIN, a card's security code, a one-time code), and the kind it is.
DIGIT_WORDS = {
    "pin": "pin",
    "cvv": "card_security_code",
    "cvc": "card_security_code",
    "security code": "card_security_code",
    "otp": "one_time_code",
    "totp": "one_time_code",
    "one-time code": "one_time_code",
    "one time code": "one_time_code",
    "2fa code": "one_time_code",
    "sms code": "one_time_code",
    "login code": "one_time_code",
    "otp code": "one_time_code",
    "mfa code": "one_time_code",
    "verification code": "one_time_code",
}
