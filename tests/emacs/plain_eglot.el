;;; plain_eglot.el --- Plain eglot, no agent-edit package (issue 14)  -*- lexical-binding: t; -*-

;; What a user gets who only adds the server to `eglot-server-programs': eglot's own applyEdit
;; handling (late didChange, lazy version counter, no resource operations) and a synchronous
;; request, as `eglot-execute' makes.  The server must report each outcome truthfully.

(load (expand-file-name "harness.el" (file-name-directory load-file-name)) nil t)

(h-scenario
 (let ((sync (h-open "sync.txt"))
       (typed (h-open "typed.txt")))
   ;; A synchronous replace: Emacs is busy waiting, so eglot's didChange leaves after the answer.
   (h-observe "sync_result" (h-execute "replace" '(:path "sync.txt" :oldText "beta" :newText "BETA")))
   (h-observe "sync_text" (h-text sync))
   ;; Typing eglot has not sent yet, then a versioned edit planned on the old text.
   (h-observe "typed_read" (h-execute "read" '(:path "typed.txt")))
   (h-type typed "typed\n")
   (h-observe "typed_result" (h-execute "replace" '(:path "typed.txt" :oldText "beta" :newText "BETA")))
   (h-observe "typed_text" (h-text typed))
   ;; Add, Delete, Move of files not open: eglot advertises no resourceOperations.
   (h-observe "res_result"
              (h-execute "applyPatch"
                         (list :patch "*** Begin Patch
*** Add File: added.txt
+fresh
*** Delete File: gone.txt
*** Update File: old.txt
*** Move to: moved.txt
@@
-old
+moved
*** End Patch
")))
   (h-observe "tree_after" (list :added (h-disk "added.txt") :gone (h-disk "gone.txt")
                                 :old (h-disk "old.txt") :moved (h-disk "moved.txt")))
   (h-observe "history" (h-execute "history" '(:limit 10)))))
