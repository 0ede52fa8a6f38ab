;;; file_formats.el --- What a read says of a file's line endings and BOM in Emacs  -*- lexical-binding: t; -*-

;; Emacs shows a CRLF file with LF (buffer-file-coding-system ...-dos) and strips a UTF-8 BOM
;; (utf-8-with-signature), so the text eglot sends says "LF, no BOM": a read of such a file
;; open in Emacs reported `eol: lf' and `bom: false', and an agent told so writes the wrong thing.
;; The package declares the buffer's coding system to the server (agentEdit/documentFormat).

(load (expand-file-name "harness.el" (file-name-directory load-file-name)) nil t)

(h-scenario
 (dolist (name '("lf" "crlf" "bom" "bom_crlf"))
   (let* ((file (concat name ".txt"))
          (buf (h-open file)))
     (with-current-buffer buf
       (h-observe (concat name "_coding") (symbol-name buffer-file-coding-system))
       ;; Through eglot's own request (nothing flushed first) and through the package.
       (h-observe (concat name "_plain") (h-execute "read" (list :path file)))
       (h-observe (concat name "_read") (agent-edit-read (list :path file))))))
 ;; The user changes how the CRLF file will be saved (C-x RET f unix): the read follows.
 (with-current-buffer (h-buffer-of "crlf.txt")
   (set-buffer-file-coding-system 'utf-8-unix)
   (h-observe "converted_read" (agent-edit-read '(:path "crlf.txt")))
   ;; An edit then a save: the disk holds what the read said.
   (h-observe "converted_replace"
              (agent-edit-replace '(:path "crlf.txt" :oldText "one" :newText "ONE")))
   (save-buffer)
   (h-observe "converted_disk"
              (with-temp-buffer
                (insert-file-contents-literally (expand-file-name "crlf.txt" h-root))
                (buffer-string)))))
