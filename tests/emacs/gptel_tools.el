;;; gptel_tools.el --- The gptel tools, called the way gptel calls them  -*- lexical-binding: t; -*-

;; gptel is not installable here (no ELPA/MELPA), so `gptel-make-tool' is a stub that records its
;; arguments, and the tool's :function is called as gptel's `gptel--handle-tool-use' does: the
;; model's JSON arguments parsed, one value per declared argument in :args order (nil when the
;; model left an optional one out), and for an :async tool a callback first.

(load (expand-file-name "harness.el" (file-name-directory load-file-name)) nil t)

(defvar gptel-stub--tools nil "The plists `gptel-make-tool' was called with.")

(defun gptel-make-tool (&rest slots)
  "Stub: record SLOTS."
  (push slots gptel-stub--tools)
  slots)

(defun gptel-stub--arg (arg)
  "ARG, one of a tool's :args, as JSON for the drift test: its name, type, optional-ness, enum
and the names and types of its properties."
  (let ((properties (plist-get arg :properties)))
    (list :name (plist-get arg :name)
          :type (symbol-name (plist-get arg :type))
          :optional (if (plist-get arg :optional) t :json-false)
          :enum (or (plist-get arg :enum) [])
          :properties (vconcat
                       (cl-loop for (key spec) on properties by #'cddr
                                collect (list :name (substring (symbol-name key) 1)
                                              :type (symbol-name (plist-get spec :type))))))))

(defun gptel-stub--call (name json-args)
  "Call tool NAME with the model's JSON-ARGS as gptel does; return the result text."
  (let* ((tool (or (cl-find name gptel-stub--tools
                            :key (lambda (s) (plist-get s :name)) :test #'equal)
                   (error "no tool %s" name)))
         (args (json-parse-string json-args :object-type 'plist
                                  :null-object nil :false-object :json-false))
         (values (mapcar (lambda (arg)
                           (plist-get args (intern (concat ":" (plist-get arg :name)))))
                         (plist-get tool :args)))
         (result 'none))
    (if (plist-get tool :async)
        (apply (plist-get tool :function) (lambda (r) (setq result r)) values)
      (setq result (apply (plist-get tool :function) values)))
    (h-wait (lambda () (not (eq result 'none))) 30)
    result))

(h-scenario
 (let ((buf (h-open "notes.txt")))
   ;; gptel loading now runs the package's `with-eval-after-load'.  (Inside a file being loaded,
   ;; as this scenario is, Emacs would delay that until the file's end.)
   (let ((load-file-name nil)) (provide 'gptel))
   (h-observe "tools"
              (vconcat
               (mapcar (lambda (s)
                         (list :name (plist-get s :name)
                               :async (and (plist-get s :async) t)
                               :category (plist-get s :category)
                               :has_function (and (functionp (plist-get s :function)) t)
                               :description (plist-get s :description)
                               :confirm (if (plist-member s :confirm) t :json-false)
                               :args (vconcat (mapcar #'gptel-stub--arg
                                                      (plist-get s :args)))))
                       (reverse gptel-stub--tools))))
   (h-observe "read" (gptel-stub--call "agent_edit_read" "{\"path\": \"notes.txt\"}"))
   (h-observe "replace"
              (gptel-stub--call "agent_edit_replace"
                                "{\"path\": \"notes.txt\", \"old_text\": \"todo\", \"new_text\": \"done\"}"))
   (h-observe "text" (h-text buf))
   (h-observe "no_match"
              (gptel-stub--call "agent_edit_replace"
                                "{\"path\": \"notes.txt\", \"old_text\": \"absent\", \"new_text\": \"x\", \"replace_all\": false}"))
   (h-observe "patch"
              (gptel-stub--call "agent_edit_apply_patch"
                                (json-serialize
                                 (list :patch "*** Begin Patch\n*** Update File: notes.txt\n@@\n-done: write tests\n+shipped: write tests\n*** End Patch\n"))))
   (h-observe "text_after_patch" (h-text buf))
   ;; replace_all as a string: "false" must not be taken as true (every "t" replaced).
   (h-observe "string_flag"
              (gptel-stub--call "agent_edit_replace"
                                "{\"path\": \"notes.txt\", \"old_text\": \"t\", \"new_text\": \"T\", \"replace_all\": \"false\"}"))
   (h-observe "text_after_string_flag" (h-text buf))
   ;; A malformed call (the model sent a number for the path) still answers, never hangs gptel.
   (h-observe "bad_args" (gptel-stub--call "agent_edit_read" "{\"path\": 42}"))
   ;; The arguments beyond the basic ones reach the server under its camelCase names.
   (h-observe "dry_run"
              (gptel-stub--call "agent_edit_replace"
                                "{\"path\": \"notes.txt\", \"old_text\": \"shipped\", \"new_text\": \"x\", \"dry_run\": true}"))
   (h-observe "stale_expect"
              (gptel-stub--call "agent_edit_replace"
                                "{\"path\": \"notes.txt\", \"old_text\": \"shipped\", \"new_text\": \"x\", \"expect\": {\"sha256\": \"0000000000000000000000000000000000000000000000000000000000000000\"}}"))
   (h-observe "bad_match"
              (gptel-stub--call "agent_edit_replace"
                                "{\"path\": \"notes.txt\", \"old_text\": \"shipped\", \"new_text\": \"x\", \"match\": \"fuzzy\"}"))
   (h-observe "numbered"
              (gptel-stub--call "agent_edit_read" "{\"path\": \"notes.txt\", \"line_numbers\": false, \"start_line\": 1}"))
   (h-observe "write"
              (gptel-stub--call "agent_edit_write" "{\"path\": \"new.txt\", \"text\": \"made\\n\"}"))
   (h-observe "history"
              (gptel-stub--call "agent_edit_history" "{\"format\": \"json\", \"limit\": 1}"))
   (let* ((patch (json-parse-string (gethash "patch" h-observed) :object-type 'plist))
          (id (plist-get patch :editId)))
     (h-observe "undo_dry"
                (gptel-stub--call "agent_edit_undo"
                                  (format "{\"edit_id\": %d, \"dry_run\": true}" id))))
   (h-observe "text_at_end" (h-text buf))))
