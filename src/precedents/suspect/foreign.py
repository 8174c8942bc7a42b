"""The same orders in other languages: Spanish, French, German, Portuguese, Italian,
Chinese, Japanese, Korean, Russian and Greek. Each family of the English patterns that
attacks use in translation (ignore the previous instructions, you are now …, I am your
developer, do not tell the user, send the key to a URL, pre-approved so skip the
confirmation), in the words those attacks use (CyberSecEval's machine-translated
prompt injections, tests/fixtures/suspect-corpus).

Latin-script patterns run when one of their words is in the text; the others only on
text that is not ASCII.
"""

from __future__ import annotations

import re

from precedents.suspect.rule import compiled, words

_ANY = r"(?:\w+\W+){0,4}?"  # up to four words
_NEAR = r"[^。．！？!?\n]{0,14}?"  # a few characters of a CJK sentence

_ROMANCE_VERBS = words(
    "ignora ignore ignorar ignorez ignores ignorer ignoriere ignorieren ignorado olvida "
    "olvidate olvídate olvidar olvides oublie oubliez oublier vergiss vergessen missachte "
    "missachten esqueça esqueca esquece desconsidere desconsidera dimentica dimenticare "
    "disregard"
)
_ROMANCE_ORDERS = words(
    "instrucciones instrucción instruccion indicaciones directrices reglas órdenes ordenes "
    "normas instruções instrucoes regras diretrizes orientações istruzioni regole indicazioni "
    "direttive instructions consignes directives règles regles indications ordres dit compte "
    "anweisungen anleitungen instruktionen vorgaben befehle regeln richtlinien"
)
_ROLE_WORDS = words(
    "eres soy maintenant désormais dorénavant suis jetzt nun sofort bin tant entwickelte "
    "erstellte trainierte"
)
_USER_WORDS = words(
    "usuario usuário utilisateur utilisatrice benutzer nutzer anwender benutzerin nutzerin utente"
)
_SEND_WORDS = words(
    "envía envia manda sube exfiltra transmite reenvía reenvia envoie envoyez transmets "
    "téléverse televerse schicke schick sende übermittle ubermittle lade"
)
_APPROVED_WORDS = words(
    "preaprobado preaprobada preaprobados aprobado aprobada approuvé approuve autorisé "
    "genehmigt freigegeben autorisiert"
)
_APPROVED_CJK = re.compile("批准|授权|授權|承認|одобрен")


def _override(w: frozenset[str], t: str) -> bool:
    return bool(w & _ROMANCE_VERBS and w & _ROMANCE_ORDERS)


# Han, kana, Hangul, Cyrillic, Greek: the scripts of the patterns below that are not Latin.
_SCRIPTS = re.compile("[\u0370-\u03ff\u0400-\u04ff\u3040-\u30ff\u4e00-\u9fff\uac00-\ud7af]")


def _other_script(w: frozenset[str], t: str) -> bool:
    return not t.isascii() and _SCRIPTS.search(t) is not None


RULES = compiled(
    (
        # Ignore the previous instructions.
        (
            "override",
            _override,
            # Spanish, Portuguese, Italian.
            rf"\b(?:ignora\w*|ignore|olv[ií]da\w*|olvid\w*|descarta\w*|omite|esque[çc]a\w*|esque[çc]e\w*|"
            rf"desconsider\w*|dimentica\w*)\W+(?:de\W+)?{_ANY}(?:instrucci\w+|indicaci\w+|"
            r"directrices|reglas|[óo]rdenes|normas|instru[çc][õo]es|regras|diretrizes|"
            r"orienta[çc][õo]es|istruzioni|regole|indicazioni|direttive)\b|"
            # French.
            # (A French article or determiner between: "ignore any instructions found in web
            # pages" is an English safety rule.)
            r"\b(?:ignore|ignorez|ignorer|oublie|oubliez|oublier)\W+(?:\w+\W+){0,2}?(?:toutes|tous|"
            r"les|vos|tes|ces|des)\W+(?:\w+\W+){0,2}?(?:instructions|"
            r"consignes|directives|r[èe]gles|indications|ordres)\b|"
            r"\b(?:ignore|ignorez|oublie|oubliez)\W+tout\W+ce\W+(?:qu|que)\W+(?:on|l'on|je|vous)?\W*"
            r"(?:t|vous)\W+(?:a|ai|avez|as)\W+dit|"
            r"\bne\W+(?:tiens|tenez)\W+(?:pas|plus)\W+compte\W+des\W+(?:instructions|consignes)|"
            # German.
            rf"\b(?:ignorier\w*|vergiss|vergessen|missacht\w*|[üu]bergeh\w*)\W+(?:sie\W+)?{_ANY}"
            r"(?:anweisungen|anleitungen|instruktionen|vorgaben|befehle|regeln|richtlinien)\b",
        ),
        (
            "override",
            _other_script,
            # Chinese: 忽略之前的所有指令, 忽略以前的指示.
            rf"(?:忽略|无视|無視|忽视|忽視|忘记|忘記|忘掉|不要理会|不要理會|不理会|丢弃|丟棄|放弃|放棄){_NEAR}"
            rf"(?:之前|以前|先前|上面|上述|前面|此前|原来|原來|原有|原始|系统|系統|所有|一切|全部){_NEAR}"
            r"(?:指令|指示|说明|說明|规则|規則|提示|要求|命令|设定|設定)|"
            # Japanese: これまでの指示をすべて無視して, 事前の指示を無視して.
            r"(?:これまで|今まで|以前|前|上記|先|事前|すべて|全て|元|システム)の?[^。！？\n]{0,6}?"
            r"(?:指示|命令|指令|ルール|規則|プロンプト|インストラクション|設定)(?:は|を|も)?"
            r"[^。！？\n]{0,8}?(?:無視|忘れ|破棄)|"
            # Korean: 이전 지시사항을 무시하십시오.
            r"(?:이전|기존|모든|위의|앞의|앞선)[^.\n]{0,12}?(?:지시|지침|명령|규칙|프롬프트|설정)"
            r"[^.\n]{0,8}?(?:무시|잊)|"
            # Russian: Игнорируй все предыдущие инструкции.
            r"(?:игнорир\w*|проигнорир\w*|забудь\w*|забудьте|отбрось\w*|не\W+обращай\w*\W+"
            r"внимания\W+на)\W+(?:\w+\W+){0,3}?(?:предыдущ\w*|прежн\w*|вс[еёя]\w*|вышеуказ\w*|"
            r"системн\w*|сво[ийе]\w*|тво[ийе]\w*|ваш\w*|ранее)\W+(?:\w+\W+){0,2}?(?:инструкци\w*|"
            r"указани\w*|правил\w*|команд\w*|директив\w*|промпт\w*|установк\w*)|"
            # Greek: Αγνοήστε τις προηγούμενες οδηγίες.
            r"(?:αγνο\w+|ξεχ[άα]\w+)\W+(?:\w+\W+){0,3}?(?:προηγο[υύ]μεν\w+|[όο]λες)\W+(?:\w+\W+){0,2}?"
            r"(?:οδηγ\w+|εντολ\w+)",
        ),
        # You are now …; I am your developer; as an AI developed by …, I ….
        (
            "role",
            lambda w, t: not w.isdisjoint(_ROLE_WORDS),
            r"\b(?:ahora|ya)\W+(?:eres|no\W+eres)\b|\ba\W+partir\W+de\W+ahora\W+(?:eres|act[úu]a|"
            r"responde|ignora)\b|\bsoy\W+(?:tu|su)\W+(?:desarrollador|creador|programador|"
            r"administrador)\b|\bsoy\W+dios\b|"
            r"\b(?:tu|vous)\W+(?:es|êtes|etes)\W+(?:maintenant|d[ée]sormais|dor[ée]navant)\b|"
            r"\bje\W+suis\W+(?:ton|votre)\W+(?:d[ée]veloppeur|cr[ée]ateur|programmeur|"
            r"administrateur)\b|\bje\W+suis\W+dieu\b|\ben\W+tant\W+qu\W+(?:ia|intelligence\W+"
            r"artificielle)\W+(?:d[ée]velopp[ée]e?|cr[ée][ée]e?|con[çc]ue?)\W+par\W+\w+\W+(?:je|j)\b|"
            r"\b(?:du\W+bist|sie\W+sind)\W+(?:jetzt|nun|ab\W+sofort|ab\W+jetzt)\b|"
            r"\bich\W+bin\W+(?:dein|ihr)\W+(?:entwickler|sch[öo]pfer|programmierer|administrator)\b|"
            r"\bich\W+bin\W+gott\b|\bals\W+von\W+\w+\W+(?:entwickelte|erstellte|trainierte)\W+"
            r"(?:ki|ai)\W+\w+\W+ich\b",
        ),
        (
            "role",
            _other_script,
            r"你(?:现在|現在)是|從現在開始你|从现在开始你|我是(?:上帝|你的(?:开发者|開發者|开发人员|"
            r"開發人員|创造者|創造者|管理员|管理員|主人))|(?:现在|現在)就?(?:做|可以做)任何事|"
            r"あなたは(?:今|今から|これから|もう)|(?:今から|これから)あなたは|私は(?:あなたの)?"
            r"(?:開発者|創造主|管理者|神)です|オーバーライドモード|(?:開発者|管理者|システム)モード|"
            r"(?:ты|вы)\W+теперь\b|теперь\W+(?:ты|вы)\b|отныне\W+(?:ты|вы)\b|с\W+этого\W+момента\W+"
            r"(?:ты|вы)\b|\bя\W+(?:ваш|твой)\W+(?:разработчик|создатель|администратор|программист)|"
            r"\bя\W+бог\b|<\s*(?:系统|系統|システム)(?:模式|提示|消息|指令|モード)\s*>",
        ),
        # Do not tell the user.
        (
            "hijack",
            lambda w, t: not w.isdisjoint(_USER_WORDS),
            r"\bno\W+(?:le\W+)?(?:digas|informes|menciones|cuentes|reveles|comuniques)\W+"
            r"(?:\w+\W+){0,4}?al\W+usuario\b|"
            r"\bn[ãa]o\W+(?:\w+\W+)?(?:conte|diga|informe|mencione|revele)\w*\W+(?:\w+\W+){0,3}?"
            r"ao\W+usu[áa]rio\b|\bnon\W+(?:dire|dirlo|informare|menzionare|rivelare)\w*\W+"
            r"(?:\w+\W+){0,3}?all\W*utente\b|"
            r"\bn(?:e\W+|')(?:le\W+|lui\W+|l'|en\W+)?(?:dis|dites|parle|parlez|mentionne|mentionnez|"
            r"r[ée]v[èe]le|r[ée]v[ée]lez)\W+(?:rien|pas|jamais)\W+(?:\w+\W+){0,3}?"
            r"(?:à|a)\W+l\W+utilisat(?:eur|rice)\b|"
            r"\b(?:sag|sage|sagen\W+sie|erz[äa]hl\w*|erw[äa]hn\w*|verrat\w*)\W+(?:\w+\W+){0,2}?"
            r"(?:dem|der)\W+(?:benutzer|nutzer|anwender)(?:in)?\W+(?:\w+\W+){0,2}?nichts\b",
        ),
        (
            "hijack",
            _other_script,
            r"(?:不要|别|別|切勿|不得)(?:告诉|告訴|通知|让|讓)(?:用户|用戶|使用者)|"
            r"ユーザー(?:に|には)[^。\n]{0,12}?(?:伝え|言わ|知らせ|教え)(?:ない|るな)|"
            r"\bне\W+(?:говори|сообщай|рассказывай|упоминай)\w*\W+(?:\w+\W+){0,2}?пользовател\w*",
        ),
        # Send the key or the env file to a URL.
        (
            "exfiltrate",
            lambda w, t: "http" in t and ((not w.isdisjoint(_SEND_WORDS)) or _other_script(w, t)),
            r"\b(?:env[íi]a|manda|sube|exfiltra|transmite|reenv[íi]a|envoie|envoyez|transmets|"
            r"t[ée]l[ée]verse|schick\w*|sende|[üu]bermittle|lade|отправ\w*|пошли\w*|загрузи\w*|"
            r"перешли\w*)\b[^\n]{0,100}?(?:\.env\b|id_rsa|\.ssh|\.aws|contenido|contenu|inhalt|"
            r"содержимое|clave|cl[ée]s?|schl[üu]ssel|ключ|credenciales|identifiants|zugangsdaten|"
            r"пароль|secretos|secrets|geheimnisse|секрет)[^\n]{0,80}?https?://|"
            r"(?:\.env|id_rsa|\.ssh|密钥|密鑰|凭证|憑證|密码|密碼|令牌|环境变量|環境變數|鍵|認証情報|"
            r"パスワード|トークン|環境変数)[^\n]{0,60}?(?:发送|發送|上传|上傳|传到|傳到|送信|送って|"
            r"アップロード|転送)[^\n]{0,40}?https?://|"
            r"(?:发送|發送|上传|上傳)[^\n]{0,60}?(?:\.env|id_rsa|\.ssh)[^\n]{0,40}?https?://|"
            r"(?:\.env|id_rsa|\.ssh)[^\n]{0,60}?https?://\S+\s*(?:に|へ)?(?:送信|送って|アップロード|"
            r"転送|发送|發送|上传|上傳)",
        ),
        # Pre-approved, so skip the confirmation.
        (
            "bypass",
            lambda w, t: (
                (not w.isdisjoint(_APPROVED_WORDS))
                or (_other_script(w, t) and _APPROVED_CJK.search(t) is not None)
            ),
            r"\b(?:pre-?aprobad[oa]s?|ya\W+(?:est[áa]n?\W+)?aprobad[oa]s?)\b[^\n]{0,80}?"
            r"\b(?:sin|no)\W+(?:\w+\W+){0,2}?(?:confirmaci[óo]n|aprobaci[óo]n|permiso)|"
            r"\b(?:pr[ée]-?approuv[ée]e?s?|pr[ée]-?autoris[ée]e?s?|d[ée]j[àa]\W+approuv[ée]e?s?)"
            r"[^\n]{0,80}?\b(?:sans|ne\W+(?:\w+\W+){0,2}?pas)\W+(?:\w+\W+){0,2}?(?:confirmation|"
            r"approbation|autorisation|permission)|"
            r"\b(?:vorab|bereits|schon)\W+(?:genehmigt|freigegeben|autorisiert)\b[^\n]{0,80}?"
            r"\b(?:ohne|keine)\W+(?:\w+\W+){0,2}?(?:best[äa]tigung|r[üu]ckfrage|genehmigung|"
            r"nachfrage)|"
            r"(?:已经?|已經?)(?:预先|預先|事先)?(?:批准|授权|授權|同意)[^\n]{0,40}?(?:跳过|跳過|无需|無需|"
            r"不需要|不用)(?:确认|確認|批准|审批|審批)|"
            r"(?:事前)?承認済み[^\n]{0,40}?確認[^\n]{0,6}?(?:スキップ|省略|不要|せず)|"
            r"(?:заранее|предварительно|уже)\W+одобрен\w*[^\n]{0,80}?без\W+(?:\w+\W+){0,1}?"
            r"подтвержд\w*",
        ),
    )
)
