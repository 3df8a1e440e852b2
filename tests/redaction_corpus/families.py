"""The corpus families other than provider tokens: kind -> maker(values) -> (text, [secrets])."""

from __future__ import annotations

from tests.redaction_corpus.values import DIGITS, UPPER, Values

_PWD = "password"


def _one(template_choices: list[str], secret_maker):
    def make(v: Values) -> tuple[str, list[str]]:
        secret = secret_maker(v)
        return v.pick(template_choices).format(s=secret), [secret]

    return make


def _pw(v: Values) -> str:
    return v.password(v.rng.randint(10, 18))


def _token(v: Values) -> str:
    return v.b62(v.rng.randint(20, 40))


KEYWORD_PROSE = [
    ("en_password_is", _one(["the password for the staging box is {s} btw", "My new password is {s}."], _pw)),
    ("en_password_colon", _one(["Password: {s}", "password for grafana: {s} (admin user)"], _pw)),
    ("en_passphrase_quoted", _one(["The passphrase is '{s}'.", 'passphrase: "{s}"'], lambda v: v.words(4))),
    ("en_passphrase_words", _one(["passphrase: {s}", "password: {s}"], lambda v: v.words(4))),
    ("en_secret_access_key", _one(["The secret access key is {s} for the backup user."], lambda v: v.b64(40))),
    ("en_auth_token", _one(["her auth token is {s} and it expires Friday", "auth token → {s}"], _token)),
    ("en_api_key_for", _one(["the API key for the geocoder is {s}", "api key: {s}"], _token)),
    ("en_credentials", _one(["credentials are admin / {s} for now", "creds: {s}"], _pw)),
    ("en_pin", _one(["the PIN is {s}", "PIN: {s}"], lambda v: v.digits(v.rng.randint(4, 6)))),
    ("en_recovery_codes", _one(["recovery codes: {s}"], lambda v: f"{v.hex(4)}-{v.hex(4)} {v.hex(4)}-{v.hex(4)}")),
    ("en_seed_phrase", _one(["seed phrase: {s}", "mnemonic: {s}"], lambda v: v.words(8))),
    ("en_client_secret_prose", _one(["client secret is {s}, client id is app-123"], _token)),
    ("de_passwort", _one(["Das Passwort lautet {s}, bitte nicht weitergeben.", "Passwort: {s}"], _pw)),
    ("de_kennwort", _one(["Kennwort für den Router ist {s}"], _pw)),
    ("fr_mot_de_passe", _one(["le mot de passe est {s} pour le serveur", "mot de passe : {s}"], _pw)),
    ("es_contrasena", _one(["la contraseña es {s} para el panel", "Contraseña: {s}"], _pw)),
    ("pt_senha", _one(["a senha é {s}", "senha do banco: {s}"], _pw)),
    ("it_password", _one(["la password è {s}", "chiave API: {s}"], _pw)),
    ("nl_wachtwoord", _one(["het wachtwoord is {s}", "Wachtwoord: {s}"], _pw)),
    ("pl_haslo", _one(["hasło to {s}", "Hasło: {s}"], _pw)),
    ("ru_parol", _one(["пароль: {s}", "Пароль от сервера — {s}"], _pw)),
    ("zh_mima", _one(["密码是{s}，别告诉别人", "数据库密码：{s}"], _pw)),
    ("ja_password", _one(["パスワードは{s}です", "パスワード: {s}"], _pw)),
    ("ko_password", _one(["비밀번호는 {s} 입니다", "비밀번호: {s}"], _pw)),
    ("tr_sifre", _one(["şifre: {s}", "Wi-Fi şifresi {s}"], _pw)),
    ("sv_losenord", _one(["lösenordet är {s}", "Lösenord: {s}"], _pw)),
]

CLI_HEADERS = [
    (
        "mysql_p_attached",
        _one(["mysql -h db.internal -uadmin -p{s} prod", "mysqldump -u root -p{s} shop > dump.sql"], _pw),
    ),
    ("mariadb_password_flag", _one(["mariadb --user=app --password={s} app"], _pw)),
    ("sshpass", _one(["sshpass -p '{s}' ssh deploy@10.0.4.7", "sshpass -p {s} scp build.tgz ops@bastion:"], _pw)),
    ("docker_login", _one(["docker login -u ci -p {s} registry.example.com"], _pw)),
    ("redis_cli_a", _one(["redis-cli -h cache -a {s} PING"], _pw)),
    ("ldapsearch_w", _one(["ldapsearch -x -D cn=admin,dc=example,dc=org -w {s} -b dc=example,dc=org"], _pw)),
    ("smbclient_user_pass", _one(["smbclient //fs/share -U backup%{s}"], _pw)),
    (
        "curl_user_pass",
        _one(["curl -u deploy:{s} https://ci.example.com/api/build", "curl --user admin:{s} -X POST https://x"], _pw),
    ),
    ("wget_password", _one(["wget --user=bob --password={s} https://files.example.com/a.zip"], _pw)),
    ("pgpassword_env", _one(["PGPASSWORD={s} psql -h db -U app app", "PGPASSWORD='{s}' pg_dump app"], _pw)),
    ("zip_P", _one(["zip -P {s} -r backup.zip ./data"], _pw)),
    ("sevenzip_p", _one(["7z a -p{s} secrets.7z notes/"], _pw)),
    ("openssl_passin", _one(["openssl rsa -in key.pem -passin pass:{s} -out plain.pem"], _pw)),
    ("keytool_storepass", _one(["keytool -list -keystore app.jks -storepass {s}"], _pw)),
    ("htpasswd_b", _one(["htpasswd -b /etc/nginx/.htpasswd admin {s}"], _pw)),
    ("sqlplus_userpass", _one(["sqlplus scott/{s}@orcl"], _pw)),
    (
        "generic_password_flag",
        _one(
            ["./manage.py createsuperuser --password {s}", "vault login -method=userpass username=ops password={s}"],
            _pw,
        ),
    ),
    ("token_flag", _one(["gh-release --token {s} --tag v1.4", "./deploy.sh --api-key={s}"], _token)),
    (
        "auth_bearer",
        _one(["Authorization: Bearer {s}", 'curl -H "Authorization: Bearer {s}" https://api.example.com/me'], _token),
    ),
    ("auth_basic", _one(["Authorization: Basic {s}"], lambda v: v.b64_of(f"ops:{v.password(12)}"))),
    ("auth_token_scheme", _one(["Authorization: Token {s}", "-H 'Authorization: token {s}'"], lambda v: v.hex(40))),
    (
        "auth_digest",
        _one(
            ['Authorization: Digest username="ana", realm="api", nonce="{s}", response="6d1ce0"'], lambda v: v.hex(32)
        ),
    ),
    ("auth_ssws", _one(["Authorization: SSWS {s}"], lambda v: "00" + v.urlsafe(40))),
    (
        "auth_aws4",
        _one(
            [
                "Authorization: AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20240603/us-east-1/s3/aws4_request, "
                "Signature={s}"
            ],
            lambda v: v.hex(64),
        ),
    ),
    ("x_api_key_header", _one(["X-API-Key: {s}", "x-api-key: {s}"], _token)),
    ("x_auth_token_header", _one(["X-Auth-Token: {s}"], _token)),
    (
        "cookie_header",
        _one(["Cookie: sessionid={s}; csrftoken=abc", "Set-Cookie: session={s}; Path=/; HttpOnly"], _token),
    ),
    ("proxy_authorization", _one(["Proxy-Authorization: Basic {s}"], lambda v: v.b64_of(f"proxy:{v.password(10)}"))),
]


def _k8s(v: Values) -> tuple[str, list[str]]:
    user, pw = v.b64_of("app"), v.b64_of(v.password(16))
    text = (
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: db-credentials\n  namespace: prod\ntype: Opaque\n"
        f"data:\n  username: {user}\n  password: {pw}\n"
    )
    return text, [pw]


def _k8s_string(v: Values) -> tuple[str, list[str]]:
    token = v.b62(32)
    text = f"kind: Secret\napiVersion: v1\nmetadata:\n  name: api\nstringData:\n  API_TOKEN: {token}\n  MODE: prod\n"
    return text, [token]


def _k8s_json(v: Values) -> tuple[str, list[str]]:
    pw = v.b64_of(v.password(14))
    text = f'{{"apiVersion": "v1", "kind": "Secret", "metadata": {{"name": "s"}}, "data": {{"db-pass": "{pw}"}}}}'
    return text, [pw]


def _docker(v: Values) -> tuple[str, list[str]]:
    auth = v.b64_of(f"ci:{v.password(14)}")
    return f'{{\n  "auths": {{\n    "registry.example.com": {{\n      "auth": "{auth}"\n    }}\n  }}\n}}', [auth]


def _service_account(v: Values) -> tuple[str, list[str]]:
    key_id, body = v.hex(40), v.pem_body(3, "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC")
    pem = "-----BEGIN PRIVATE KEY-----\\n" + body.replace("\n", "\\n") + "\\n-----END PRIVATE KEY-----\\n"
    text = (
        f'{{"type": "service_account", "project_id": "acme-prod", "private_key_id": "{key_id}", '
        f'"private_key": "{pem}", "client_email": "ci@acme-prod.iam.gserviceaccount.com"}}'
    )
    return text, [key_id, body.split("\n")[1]]


STRUCTURED = [
    ("k8s_secret_data", _k8s),
    ("k8s_secret_string_data", _k8s_string),
    ("k8s_secret_json", _k8s_json),
    ("docker_config_auths", _docker),
    ("gcp_service_account_json", _service_account),
    ("yaml_password", _one(["database:\n  host: db.internal\n  password: {s}\n  pool: 5"], _pw)),
    ("yaml_nested_secret", _one(['auth:\n  rootPassword: "{s}"\n  replicaCount: 2'], _pw)),
    ("json_password", _one(['{{"user": "svc", "password": "{s}", "port": 5432}}'], _pw)),
    ("json_client_secret", _one(['{{"client_id": "web-42", "client_secret": "{s}"}}'], _token)),
    ("toml_password", _one(['[database]\nuser = "app"\npassword = "{s}"'], _pw)),
    ("ini_password", _one(["[smtp]\nhost = mail.example.com\npassword = {s}"], _pw)),
    ("xml_password", _one(["<datasource><user>app</user><password>{s}</password></datasource>"], _pw)),
    ("dotnet_connection_string", _one(['"Default": "Server=sql1;Database=Shop;User Id=app;Password={s};"'], _pw)),
    ("dotnet_appsettings_key", _one(['<add key="ApiSecret" value="{s}" />'], _token)),
    ("spring_properties", _one(["spring.datasource.password={s}"], _pw)),
    ("php_define", _one(["define('DB_PASSWORD', '{s}');"], _pw)),
    ("php_array", _one(["'password' => '{s}',"], _pw)),
    ("netrc", _one(["machine api.example.com login bot password {s}"], _pw)),
    ("compose_environment", _one(["    environment:\n      - POSTGRES_PASSWORD={s}\n      - POSTGRES_DB=app"], _pw)),
    ("terraform_tfvars", _one(['db_password = "{s}"'], _pw)),
    ("ansible_vars", _one(["ansible_become_pass: {s}"], _pw)),
    ("npmrc_auth", _one(["//npm.example.com/:_authToken={s}"], lambda v: v.uuid())),
    ("pypirc_password", _one(["[pypi]\nusername = __token__\npassword = {s}"], _pw)),
    (
        "sql_create_user",
        _one(["CREATE USER app WITH PASSWORD '{s}';", "ALTER USER 'app'@'%' IDENTIFIED BY '{s}';"], _pw),
    ),
]

ENV_FILE = [
    ("env_db_password_symbols", _one(["DB_PASSWORD={s}", "DB_PASS={s}\nDB_HOST=db"], _pw)),
    ("env_django_secret_key", _one(["SECRET_KEY=django-insecure-{s}"], lambda v: v.password(40))),
    ("env_jwt_secret", _one(["JWT_SECRET={s}"], lambda v: v.b64(44))),
    ("env_export_quoted", _one(['export API_TOKEN="{s}"'], _token)),
    ("env_quoted_spaces", _one(['SMTP_PASSWORD="{s}"'], lambda v: v.words(2) + " " + v.password(8))),
    ("env_single_quoted", _one(["REDIS_PASSWORD='{s}'"], _pw)),
    ("env_laravel_app_key", _one(["APP_KEY=base64:{s}"], lambda v: v.b64(43) + "=")),
    ("env_session_secret", _one(["SESSION_SECRET={s}"], _pw)),
    ("env_encryption_key_hex", _one(["ENCRYPTION_KEY={s}"], lambda v: v.hex(64))),
    ("env_webhook_secret", _one(["GITHUB_WEBHOOK_SECRET={s}"], _pw)),
    ("env_mysql_root_password", _one(["MYSQL_ROOT_PASSWORD={s}"], _pw)),
    ("env_admin_pass", _one(["ADMIN_PASS={s}"], _pw)),
    ("env_oauth_client_secret", _one(["OAUTH_CLIENT_SECRET={s}"], _token)),
    (
        "env_private_key_escaped",
        _one(['PRIVATE_KEY="-----BEGIN PRIVATE KEY-----\\n{s}\\n-----END PRIVATE KEY-----"'], lambda v: v.b64(64)),
    ),
    ("env_multiple", _one(["DEBUG=false\nALLOWED_HOSTS=example.com\nSTRIPE_API_SECRET={s}\nLOG_LEVEL=info"], _pw)),
    ("env_trailing_comment", _one(["MAIL_PASSWORD={s}  # rotated monthly"], _pw)),
    ("env_windows_set", _one(["set DB_PASSWORD={s}", '$env:API_SECRET = "{s}"'], _pw)),
    ("env_dotenv_yaml", _one(["env:\n  - name: API_KEY\n    value: {s}"], _token)),
]


def _fmt_ssn(v: Values) -> str:
    area = v.rng.choice([n for n in range(1, 900) if n != 666])
    return f"{area:03d}-{v.rng.randint(1, 99):02d}-{v.rng.randint(1, 9999):04d}"


def _nino(v: Values) -> str:
    first = v.rng.choice("ABCEGHJKLMNPRSTWXYZ")
    second = v.rng.choice("ABCEGHJKLMNPRSTWXYZ")
    digits = v.digits(6, DIGITS)
    return f"{first}{second} {digits[:2]} {digits[2:4]} {digits[4:]} {v.rng.choice('ABCD')}"


def _nir(v: Values) -> str:
    body = f"{v.rng.randint(1, 2)}{v.rng.randint(50, 99):02d}{v.rng.randint(1, 12):02d}{v.rng.randint(1, 95):02d}"
    body += f"{v.rng.randint(1, 999):03d}{v.rng.randint(1, 999):03d}"
    key = 97 - int(body) % 97
    return f"{body[0]} {body[1:3]} {body[3:5]} {body[5:7]} {body[7:10]} {body[10:13]} {key:02d}"


def _dni(v: Values) -> str:
    number = v.rng.randint(10_000_000, 99_999_999)
    return f"{number}{'TRWAGMYFPDXBNJZSQVHLCKE'[number % 23]}"


def _nie(v: Values) -> str:
    prefix = v.rng.choice("XYZ")
    number = v.rng.randint(1_000_000, 9_999_999)
    return f"{prefix}{number}{'TRWAGMYFPDXBNJZSQVHLCKE'[int(str('XYZ'.index(prefix)) + str(number)) % 23]}"


def _codice_fiscale(v: Values) -> str:
    from stdnum.it import codicefiscale

    body = v.chars(UPPER, 6) + f"{v.rng.randint(50, 99)}" + v.rng.choice("ABCDEHLMPRST")
    body += f"{v.rng.randint(1, 28):02d}" + v.rng.choice(UPPER) + f"{v.rng.randint(100, 999)}"
    return body + codicefiscale.calc_check_digit(body)


def _cpf(v: Values) -> str:
    def make() -> str:
        number = v.digits(11)
        return f"{number[:3]}.{number[3:6]}.{number[6:9]}-{number[9:]}"

    return v.valid("br.cpf", make)


def _pesel(v: Values) -> str:
    from stdnum.pl import pesel

    body = v.date6()[:6] + v.digits(4, DIGITS)
    return body + pesel.calc_check_digit(body)


def _personnummer(v: Values) -> str:
    from stdnum import luhn

    body = v.date6() + v.digits(3, DIGITS)
    return f"{body[:6]}-{body[6:]}{luhn.calc_check_digit(body)}"


def _hetu(v: Values) -> str:
    date = f"{v.rng.randint(1, 28):02d}{v.rng.randint(1, 12):02d}{v.rng.randint(50, 99):02d}"
    serial = f"{v.rng.randint(2, 899):03d}"
    return f"{date}-{serial}{'0123456789ABCDEFHJKLMNPRSTUVWXY'[int(date + serial) % 31]}"


def _sin(v: Values) -> str:
    from stdnum import luhn

    body = v.digits(8, "1234567")
    number = body + luhn.calc_check_digit(body)
    return f"{number[:3]} {number[3:6]} {number[6:]}"


def _ric(v: Values) -> str:
    from stdnum.cn import ric

    body = f"110101{v.rng.randint(1960, 2000)}{v.rng.randint(1, 12):02d}{v.rng.randint(1, 28):02d}{v.digits(3, DIGITS)}"
    return body + ric.calc_check_digit(body)


def _pan(v: Values) -> str:
    return v.chars(UPPER, 3) + "P" + v.chars(UPPER, 1) + v.digits(4, DIGITS) + v.chars(UPPER, 1)


def _ctx(templates: list[str], maker):
    return _one(templates, maker)


CHECKSUMMED = [
    ("card_visa", _ctx(["charge card {s} exp 09/27", "Visa: {s}"], lambda v: v.card("4", 16, (4, 4, 4, 4)))),
    ("card_visa_plain", _ctx(["the card number is {s}", "cc={s}"], lambda v: v.card("4", 16))),
    (
        "card_mastercard",
        _ctx(
            ["Mastercard {s}, cvc on the back", "pay with {s}"],
            lambda v: v.card("5" + v.pick("12345"), 16, (4, 4, 4, 4)),
        ),
    ),
    ("card_mastercard_2series", _ctx(["new card {s}"], lambda v: v.card("2221", 16, (4, 4, 4, 4)))),
    ("card_amex", _ctx(["Amex {s} on file", "amex: {s}"], lambda v: v.card("3" + v.pick("47"), 15, (4, 6, 5)))),
    ("card_discover", _ctx(["Discover card {s}"], lambda v: v.card("6011", 16, (4, 4, 4, 4)))),
    ("card_jcb", _ctx(["JCB {s}"], lambda v: v.card("35", 16, (4, 4, 4, 4)))),
    ("card_diners", _ctx(["Diners Club {s}"], lambda v: v.card("36", 14, (4, 6, 4)))),
    ("card_unionpay", _ctx(["UnionPay {s}"], lambda v: v.card("62", 16, (4, 4, 4, 4)))),
    ("iban_de", _ctx(["IBAN: {s}", "please wire it to {s} today"], lambda v: v.iban("DE", "n" * 18))),
    ("iban_gb", _ctx(["IBAN {s}"], lambda v: v.iban("GB", "aaaa" + "n" * 14))),
    ("iban_fr", _ctx(["RIB/IBAN : {s}"], lambda v: v.iban("FR", "n" * 10 + "c" * 11 + "nn"))),
    ("iban_nl", _ctx(["rekening {s}"], lambda v: v.iban("NL", "aaaa" + "n" * 10))),
    ("iban_es", _ctx(["cuenta {s}"], lambda v: v.iban("ES", "n" * 20))),
    ("iban_it", _ctx(["conto {s}"], lambda v: v.iban("IT", "a" + "n" * 10 + "c" * 12))),
    ("iban_ch", _ctx(["Konto {s}"], lambda v: v.iban("CH", "n" * 5 + "c" * 12))),
    ("iban_be", _ctx(["compte {s}"], lambda v: v.iban("BE", "n" * 12))),
    ("iban_compact", _ctx(["iban={s}"], lambda v: v.iban("DE", "n" * 18).replace(" ", ""))),
    ("us_ssn", _ctx(["SSN: {s}", "her social security number is {s}"], _fmt_ssn)),
    ("gb_nino", _ctx(["NI number {s}", "National Insurance: {s}"], _nino)),
    ("nl_bsn", _ctx(["BSN: {s}", "burgerservicenummer {s}"], lambda v: v.valid("nl.bsn", lambda: v.digits(9)))),
    (
        "de_steuer_id",
        _ctx(
            ["Steuer-ID: {s}", "steuerliche Identifikationsnummer {s}"],
            lambda v: v.valid("de.idnr", lambda: v.digits(11)),
        ),
    ),
    ("fr_nir", _ctx(["n° de sécurité sociale : {s}", "NIR {s}"], _nir)),
    ("es_dni", _ctx(["DNI {s}", "mi DNI es {s}"], _dni)),
    ("es_nie", _ctx(["NIE: {s}"], _nie)),
    ("it_codice_fiscale", _ctx(["codice fiscale {s}", "CF: {s}"], _codice_fiscale)),
    ("br_cpf", _ctx(["CPF: {s}", "meu CPF é {s}"], _cpf)),
    ("in_aadhaar", _ctx(["Aadhaar {s}", "aadhaar no: {s}"], lambda v: v.aadhaar())),
    ("in_pan", _ctx(["PAN: {s}"], _pan)),
    ("pl_pesel", _ctx(["PESEL: {s}", "numer PESEL {s}"], lambda v: v.valid("pl.pesel", lambda: _pesel(v)))),
    ("se_personnummer", _ctx(["personnummer {s}"], lambda v: v.valid("se.personnummer", lambda: _personnummer(v)))),
    ("fi_hetu", _ctx(["henkilötunnus {s}", "HETU: {s}"], lambda v: v.valid("fi.hetu", lambda: _hetu(v)))),
    ("ca_sin", _ctx(["SIN: {s}", "social insurance number {s}"], _sin)),
    ("cn_ric", _ctx(["身份证 {s}", "resident id {s}"], lambda v: v.valid("cn.ric", lambda: _ric(v)))),
    (
        "be_national_number",
        _ctx(
            ["rijksregisternummer / national number {s}"],
            lambda v: v.valid("be.nn", lambda: v.date6() + v.digits(5, DIGITS)),
        ),
    ),
    (
        "no_fodselsnummer",
        _ctx(
            ["fødselsnummer {s}"],
            lambda v: v.valid(
                "no.fodselsnummer",
                lambda: (
                    f"{v.rng.randint(1, 28):02d}{v.rng.randint(1, 12):02d}{v.rng.randint(50, 99)}" + v.digits(5, DIGITS)
                ),
            ),
        ),
    ),
    ("au_tfn", _ctx(["TFN: {s}", "tax file number {s}"], lambda v: v.valid("au.tfn", lambda: v.digits(9)))),
    ("tr_tckimlik", _ctx(["TC kimlik no: {s}"], lambda v: v.valid("tr.tckimlik", lambda: v.digits(11)))),
    ("za_id_number", _ctx(["SA ID number {s}"], lambda v: v.valid("za.idnr", lambda: v.date6() + v.digits(7, DIGITS)))),
]


def _url(scheme: str, host: str, tail: str = ""):
    def make(v: Values) -> tuple[str, list[str]]:
        secret = v.password(14).replace("@", "!").replace("/", "_").replace("?", "~").replace("#", "^")
        url = f"{scheme}://{v.pick(['app', 'svc', 'admin', 'ci'])}:{secret}@{host}{tail}"
        template = v.pick(["DATABASE_URL={u}", "connect with {u} from the bastion", '"url": "{u}"', "  dsn: {u}"])
        return template.format(u=url), [secret]

    return make


def _sentry_dsn(v: Values) -> tuple[str, list[str]]:
    key = v.hex(32)
    return f"SENTRY_DSN=https://{key}@o{v.digits(6)}.ingest.sentry.io/{v.digits(7)}", [key]


def _git_token_url(v: Values) -> tuple[str, list[str]]:
    token = "glpat-" + v.urlsafe(20)
    return f"git clone https://oauth2:{token}@gitlab.example.com/acme/api.git", [token]


def _jdbc(v: Values) -> tuple[str, list[str]]:
    pw = v.password(12).replace("&", "_").replace("=", "_")
    return f"jdbc:mysql://db:3306/shop?user=app&password={pw}&useSSL=true", [pw]


URL_CREDENTIALS = [
    ("postgres_url", _url("postgres", "db.internal:5432", "/prod")),
    ("postgresql_url", _url("postgresql", "10.0.3.4", "/app?sslmode=require")),
    ("mysql_url", _url("mysql", "mysql.internal:3306", "/shop")),
    ("mongodb_srv_url", _url("mongodb+srv", "cluster0.ab1cd.mongodb.net", "/app?retryWrites=true")),
    ("redis_url", _url("redis", "cache:6379", "/0")),
    ("rediss_url", _url("rediss", "cache.example.com:6380")),
    ("amqp_url", _url("amqp", "rabbit:5672", "/vhost")),
    ("https_basic_url", _url("https", "git.example.com", "/acme/repo.git")),
    ("ftp_url", _url("ftp", "files.example.com", "/upload")),
    ("sftp_url", _url("sftp", "backup.example.com:22", "/data")),
    ("smtp_url", _url("smtp", "mail.example.com:587")),
    ("ldap_url", _url("ldaps", "ldap.example.com:636")),
    ("http_proxy_url", _url("http", "proxy.corp:3128")),
    ("mssql_url", _url("mssql", "sql1:1433", "/shop")),
    ("sentry_dsn", _sentry_dsn),
    ("git_token_url", _git_token_url),
    ("jdbc_query_password", _jdbc),
]


def _pem(label: str, first: str, escaped: bool = False, cut: bool = False):
    def make(v: Values) -> tuple[str, list[str]]:
        body = v.pem_body(v.rng.randint(3, 6), first)
        block = f"-----BEGIN {label}-----\n{body}\n-----END {label}-----"
        if cut:
            block = f"-----BEGIN {label}-----\n{body}"
        if escaped:
            block = block.replace("\n", "\\n")
        template = v.pick(["here is the key:\n{k}\nthanks", "{k}", "cat ~/.ssh/id_deploy\n{k}\n$ ls"])
        return template.format(k=block), [line for line in body.split("\n")[:2]]

    return make


def _putty(v: Values) -> tuple[str, list[str]]:
    private = v.b64(64)
    text = (
        "PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\nComment: deploy\nPublic-Lines: 2\n"
        f"AAAAC3NzaC1lZDI1NTE5AAAAI{v.b64(40)}\nPrivate-Lines: 1\n{private}\nPrivate-MAC: {v.hex(64)}"
    )
    return text, [private]


def _ssh2(v: Values) -> tuple[str, list[str]]:
    body = v.pem_body(4, "P2/56wAAA")
    begin, end = "---- BEGIN SSH2 ENCRYPTED PRIVATE KEY ----", "---- END SSH2 ENCRYPTED PRIVATE KEY ----"
    text = f'{begin}\nComment: "rsa-key"\n{body}\n{end}'
    return text, body.split("\n")[:2]


def _pkcs8_one_line(v: Values) -> tuple[str, list[str]]:
    body = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQ" + v.b64(200)
    return f"the key (base64, no header): {body}", [body]


PRIVATE_KEYS = [
    ("rsa_private_key", _pem("RSA PRIVATE KEY", "MIIEowIBAAKCAQEA")),
    ("pkcs8_private_key", _pem("PRIVATE KEY", "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC")),
    ("encrypted_private_key", _pem("ENCRYPTED PRIVATE KEY", "MIIFHDBOBgkqhkiG9w0BBQ0wQTApBgkq")),
    ("ec_private_key", _pem("EC PRIVATE KEY", "MHcCAQEEI")),
    ("openssh_private_key", _pem("OPENSSH PRIVATE KEY", "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ")),
    ("dsa_private_key", _pem("DSA PRIVATE KEY", "MIIBuwIBAAKBgQD")),
    ("pgp_private_key", _pem("PGP PRIVATE KEY BLOCK", "lQOYBF0Ld7kBCAC")),
    ("pem_json_escaped", _pem("PRIVATE KEY", "MIIEvgIBADANBgkqhkiG9w0BAQEFAASC", escaped=True)),
    ("pem_cut_without_end", _pem("RSA PRIVATE KEY", "MIIEpAIBAAKCAQEA", cut=True)),
    ("putty_private_key", _putty),
    ("ssh2_private_key", _ssh2),
    ("pkcs8_base64_one_line", _pkcs8_one_line),
]

HIGH_ENTROPY = [
    ("session_id_near_word", _one(["session id: {s}", "sid={s}"], lambda v: v.b62(32))),
    ("signing_value", _one(["webhook signing value {s}", "the signing secret {s}"], lambda v: v.b64(44))),
    ("license_key", _one(["license: {s}", "your licence key {s}"], lambda v: v.b62(28))),
    ("hmac_hex_key", _one(["hmac key {s}", "HMAC_KEY={s}"], lambda v: v.hex(64))),
    (
        "totp_secret",
        _one(
            ["otpauth://totp/Acme:ana?secret={s}&issuer=Acme", "2FA secret {s}"],
            lambda v: v.chars("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 32),
        ),
    ),
    ("bare_random_base62", _one(["paste this in: {s}", "got {s} back from the vault"], lambda v: v.b62(40))),
    ("bare_random_base64", _one(["value={s}", "blob {s} from the vault"], lambda v: v.b64(44))),
    ("account_access_value", _one(["access for the reporting account: {s}", "login value {s}"], lambda v: v.b62(24))),
    ("wallet_seed_hex", _one(["wallet seed {s}"], lambda v: v.hex(64))),
    ("vault_unseal_key", _one(["Unseal Key 1: {s}"], lambda v: v.b64(44))),
]

FAMILIES = {
    "keyword_prose": KEYWORD_PROSE,
    "cli_headers": CLI_HEADERS,
    "structured_config": STRUCTURED,
    "env_file": ENV_FILE,
    "checksummed_id": CHECKSUMMED,
    "url_credentials": URL_CREDENTIALS,
    "private_key": PRIVATE_KEYS,
    "high_entropy": HIGH_ENTROPY,
}
