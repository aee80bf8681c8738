Theory bag
Ancestors
  list[qualified] divides pred_set arithmetic combin
Libs
  boolSimps numLib Prim_rec BasicProvers metisLib mesonLib

fun ARITH q = EQT_ELIM (ARITH_CONV (Parse.Term q));

Type bag = “:'a -> num”
Type multiset = “:'a -> num”

val _ = print "Defining basic bag operations\n"

Definition EMPTY_BAG[nocompute]:
  (EMPTY_BAG:'a bag) = K 0
End

Theorem EMPTY_BAG_alt:
    EMPTY_BAG:'a bag = \x.0
Proof
  SIMP_TAC std_ss [EMPTY_BAG, FUN_EQ_THM]
QED

Definition BAG_INN[nocompute]:
  BAG_INN (e:'a) n b <=> b e >= n
End

Definition SUB_BAG[nocompute]:
  SUB_BAG b1 b2 = !x n. BAG_INN x n b1 ==> BAG_INN x n b2
End

Definition PSUB_BAG[nocompute]:
  PSUB_BAG b1 b2 <=> SUB_BAG b1 b2 /\ ~(b1 = b2)
End


Definition BAG_IN[nocompute]:
  BAG_IN (e:'a) b <=> BAG_INN e 1 b
End

val _ = set_fixity "<:" (Infix(NONASSOC, 425))
Overload "<:" = ``BAG_IN``
val _ = Unicode.unicode_version {tmnm = "<:", u = UTF8.chr 0x22F2}
        (* U+22F2 looks like ⋲ in your current font; unfortunately this
           symbol doesn't seem to correspond to anything in LaTeX... *)
val _ = TeX_notation {hol = "<:", TeX = ("\\HOLTokenIn{}:",2)}
val _ = TeX_notation {hol = UTF8.chr 0x22F2, TeX = ("\\HOLTokenIn{}:",2)}

Definition BAG_UNION[nocompute]:
                BAG_UNION b (c:'a bag) = \x. b x + c x
End
Overload "+" = ``BAG_UNION``
val _ = send_to_back_overload "+" {Name = "BAG_UNION", Thy = "bag"}
val _ = set_fixity (UTF8.chr 0x228E) (Infixl 500) (* LaTeX's \uplus *)
val _ = overload_on (UTF8.chr 0x228E, ``BAG_UNION``)
val _ = TeX_notation {hol = UTF8.chr 0x228E, TeX = ("\\ensuremath{\\uplus}", 1)}

Definition BAG_DIFF[nocompute]:
  BAG_DIFF b1 (b2:'a bag) = \x. b1 x - b2 x
End
Overload "-" = ``BAG_DIFF``
val _ = send_to_back_overload "-" {Name = "BAG_DIFF", Thy = "bag"}

Definition BAG_INSERT[nocompute]:
  BAG_INSERT (e:'a) b = (\x. if (x = e) then b e + 1 else b x)
End

val _ = add_listform {cons = "BAG_INSERT", nilstr = "EMPTY_BAG",
                      separator = [TOK ";", BreakSpace(1,0)],
                      leftdelim = [TOK "{|"], rightdelim = [TOK "|}"],
                      block_info = (PP.INCONSISTENT, 2)};
val _ = TeX_notation { hol = "{|", TeX = ("\\HOLTokenBagLeft{}", 1) }
val _ = TeX_notation { hol = "|}", TeX = ("\\HOLTokenBagRight{}", 1) }

Theorem BAG_cases:
   !b. (b = EMPTY_BAG) \/ (?b0 e. b = BAG_INSERT e b0)
Proof
  SIMP_TAC std_ss [EMPTY_BAG, BAG_INSERT, FUN_EQ_THM] THEN Q.X_GEN_TAC `b` THEN
  Q.ASM_CASES_TAC `!x. b x = 0` THEN SRW_TAC [][] THEN
  FULL_SIMP_TAC std_ss [] THEN MAP_EVERY Q.EXISTS_TAC [
    `\y. if (y = x) then b x - 1 else b y`, `x`
  ] THEN SRW_TAC [ARITH_ss][]
QED

Definition BAG_INTER[nocompute]:
  BAG_INTER b1 b2 = (\x. if (b1 x < b2 x) then b1 x else b2 x)
End


val _ = print "Properties and definition of BAG_MERGE\n"

Definition BAG_MERGE[nocompute]:
  BAG_MERGE b1 b2 = (\x. if (b1 x < b2 x) then b2 x else b1 x)
End

Theorem BAG_MERGE_IDEM[simp]:
    !b. BAG_MERGE b b = b
Proof
  SIMP_TAC std_ss [BAG_MERGE, FUN